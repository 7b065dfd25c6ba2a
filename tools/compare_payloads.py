"""Certificate payloads of a few small cells (seconds each) through sigmacert.api.certify, timings and issue time
removed: run once per tree and diff, e.g. `PYTHONPATH=OLD python tools/compare_payloads.py > a.json`,
`PYTHONPATH=. python tools/compare_payloads.py > b.json`, `diff a.json b.json` (tv, dp, tpr, fixed bins,
stages with a shared and own sigma, M = 1)."""
import json
import sys

import sigmacert.api as api

CASES = {
    "tv": dict(steps=10, epochs=2, target="0.3", sigma="1.2"),
    "tv_auto": dict(steps=4, epochs=2, target="0.4"),
    "dp": dict(steps=10, epochs=2, epsilon="1", delta="0.05", sigma="1.5"),
    "tpr": dict(steps=10, epochs=2, fpr="0.01", tpr="0.2", sigma="1.5"),
    "fixed": dict(steps=10, epochs=2, target="0.3", sigma="1.2", scheme="fixed-bins"),
    "stages": dict(stages=[(4, 2), (8, 1)], target="0.3", sigma="1.2"),
    "stages_own": dict(stages=[(4, 2, "1.2"), (8, 1, "1.3")], target="0.3"),
    "stages_dp": dict(stages=[(4, 2), (8, 1)], epsilon="1", delta="0.05", sigma="1.5"),
    "m1": dict(steps=1, epochs=3, target="0.3", sigma="2"),
    "m1_dp": dict(steps=1, epochs=3, epsilon="1", delta="0.1", sigma="2"),
}
DROP = ("issued_at", "timings")

def clean(x):
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items() if k not in DROP and "seconds" not in k}
    if isinstance(x, list):
        return [clean(v) for v in x]
    return x

out = {}
for name in sys.argv[1:] or CASES:
    try:
        c = api.certify(**CASES[name])
        out[name] = {"predicate": clean(dict(c.predicate)), "kind": c.kind, "kind_params": dict(c.kind_params),
                     "bound": str(c.bound), "sigma": str(c.sigma), "low": str(c.tv_lower)}
    except Exception as e:
        out[name] = {"error": f"{type(e).__name__}: {e}"}
print(json.dumps(out, indent=1, sort_keys=True, default=str))
