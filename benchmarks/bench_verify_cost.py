"""The verifier's cost model against measured replays (docs/verifier.md, "Cost model").

Each case is replayed in its own process (upper side `replay`, lower side `replay_lower`); the
table shows predicted and measured CPU seconds and peak resident memory, and their ratios
(predicted / measured: above 1 means the model errs high, as it should; --steps: per step).
Cases: the fixture method of tests/verifier_fixtures.py varied in one parameter at a time (grid,
precision, bits, eta, k range, E, M), hostile parameters, the committed certificates
(`--committed`) and any certificate file (`--cert`).

    python benchmarks/bench_verify_cost.py [--committed] [--cert FILE ...] [--only SUBSTRING] [--steps]

A --cert of format v3 (method v1 or v2, lower v1 or v2) is replayed the same way.
"""
from __future__ import annotations

import argparse
import base64
import glob
import json
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from verifier_fixtures import CLAIM, LOWER_METHOD, METHOD  # noqa: E402

from verifier.cost import BASE_MEMORY, MODELS  # noqa: E402
from verifier.format import v3  # noqa: E402
from verifier.format.statement import SCHEMA, SCHEMA_V2, _typed  # noqa: E402

CHILD = """
import json, resource, sys, time
time.perf_counter = time.process_time  # the replay's step timings in CPU seconds
sys.path[:0] = [{root!r}, {root!r} + "/benchmarks"]
from bench_verify_cost import typed  # noqa: E402
from verifier.replay.lower_v2 import replay_lower_v2
from verifier.replay.upper_v1 import replay
from verifier.replay.upper_v2 import replay_v2
from verifier.replay.lower_v1 import replay_lower
side, claim, method, sigma_low = json.loads(sys.argv[1])
c, m, s = typed(side, claim, method, sigma_low)
t0 = time.process_time()
if side == "upper":
    r = (replay if m["version"] == 1 else replay_v2)(c, m)
elif m["version"] == 1:
    r = replay_lower(c["steps"], c["epochs"], s, m)
else:
    r = replay_lower_v2(c, s, m)
print(json.dumps([time.process_time() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, r.seconds]))
"""


def typed(side, claim, method, sigma_low):
    """Claim, method (exact rationals) and sigma_low through the schema of their format: v3 when
    the claim names its scheme (method v1 or v2), else v1/v2."""
    if "scheme" in claim:
        sch = v3.schema({"claim": claim, "method": method} if side == "upper"
                               else {"claim": claim, "method": {"name": "lemma-c5-rounding", "version": 1},
                                     "lower": {"method": method}})
        ms = sch["method"] if side == "upper" else sch["lower"]["method"]
        cs = sch["claim"]
    else:
        cs, ms = SCHEMA["claim"], SCHEMA["method"] if side == "upper" else SCHEMA_V2["lower"]["method"]
    s = None if sigma_low is None else _typed(sigma_low, "decimal", "s")
    return _typed(claim, cs, "c"), _typed(method, ms, "m"), s


def measure(side, claim, method, sigma_low=None, timeout=3600):
    arg = json.dumps([side, claim, method, sigma_low])
    r = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT)), arg], capture_output=True,
                       text=True, timeout=timeout)
    if r.returncode:
        return None, None, r.stderr.strip().splitlines()[-1][:60], {}
    return json.loads(r.stdout) + [""]


def predict(side, claim, method, sigma_low=None):
    c, m, s = typed(side, claim, method, sigma_low)
    model = MODELS[(m["name"], m["version"])]
    cost = model(c, m) if side == "upper" else model(c, {"method": m, "sigma_low": s})
    return cost.seconds, BASE_MEMORY + cost.memory, cost.steps


def synthetic():
    c, m, lm = dict(CLAIM), dict(METHOD), dict(LOWER_METHOD)
    yield "fixture", "upper", c, m, None
    for h in ("0.002", "0.0005"):
        yield f"h={h}", "upper", c, dict(m, h=h), None
    for prec in (400, 1000, 4096):
        yield f"prec={prec}", "upper", c, dict(m, prec=prec), None
    for bits in (300, 1024):
        yield f"bits={bits}", "upper", c, dict(m, fixed_point_bits=bits), None
    yield "eta=1e-5", "upper", c, dict(m, eta="0.00001", k_minus=-100000, k_plus=200000), None
    for E in (30, 300):
        yield f"E={E}", "upper", dict(c, epochs=E), m, None
    for M, T in ((100, "800"), (1000, "8000")):
        sched = [1] * M.bit_length()
        yield f"M={M}", "upper", dict(c, steps=M), dict(m, truncation=T, lattice_schedule=sched), None
        yield f"M={M} sched", "upper", dict(c, steps=M), dict(m, truncation=T, lattice_schedule=[
            2 ** max(0, i - 3) for i in range(M.bit_length())]), None
    yield "M=1000 h=1e-3 cap 400", "upper", dict(c, steps=1000), dict(m, h="0.001", cap="400", tail_start="8",
        tail_step="0.008", truncation="8000", lattice_schedule=[2 ** max(0, i - 4) for i in range(10)]), None
    for eta in ("3", "100", "10000", "200000"):
        yield f"hostile eta={eta}", "upper", c, dict(m, eta=eta, k_minus=-2, k_plus=3), None
    yield "hostile tail_step", "upper", c, dict(m, tail_step="125000", cap="125004", truncation="96"), None
    yield "hostile cap/h 1e10", "upper", c, dict(m, tail_step="1000000", cap="100000004", h="0.01"), None
    yield "lower fixture", "lower", c, lm, "1.45"
    for h, cap in (("0.002", "16"), ("0.001", "64")):
        yield f"lower h={h} cap={cap}", "lower", c, dict(lm, h=h, cap=cap), "1.45"
    yield "lower prec=1000", "lower", c, dict(lm, prec=1000), "1.45"
    yield "lower bits=1024", "lower", c, dict(lm, fixed_point_bits=1024), "1.45"
    yield "lower E=300", "lower", dict(c, epochs=300), lm, "1.45"
    yield "lower M=1000", "lower", dict(c, steps=1000), dict(lm, lattice_schedule=[
        2 ** max(0, i - 4) for i in range(10)]), "1.45"


def certificates(files):
    for f in files:
        p = json.loads(base64.b64decode(json.load(open(f))["payload"]))["predicate"]
        name = Path(f).stem
        if p["method"]["name"] == "gaussian-shift":  # closed forms: nothing to measure
            continue
        yield name, "upper", p["claim"], p["method"], None
        if "lower" in p:
            yield name, "lower", p["claim"], p["lower"]["method"], p["lower"]["sigma_low"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--committed", action="store_true", help="also the nine committed certificates (minutes)")
    ap.add_argument("--cert", action="append", default=[], help="also this certificate file (repeatable)")
    ap.add_argument("--only", default="", help="cases whose name contains this")
    ap.add_argument("--steps", action="store_true", help="predicted / measured CPU seconds of each step")
    a = ap.parse_args()
    files = sorted(glob.glob(str(ROOT / "artifacts" / "certificates" / "*.json"))) if a.committed else []
    cases = list(synthetic()) + list(certificates(files + a.cert))
    print(f"{'case':28} {'side':5} {'pred s':>8} {'cpu s':>8} {'ratio':>6} {'pred MB':>8} {'rss MB':>8} {'ratio':>6}")
    for name, side, claim, method, sl in cases:
        if a.only not in name:
            continue
        ps, pm, psteps = predict(side, claim, method, sl)
        if ps > 600 or pm > 6 << 30:  # what the verifier refuses by default is not run here
            print(f"{name:28} {side:5} {ps:8.3g} {'-':>8} {'':6} {pm / 2**20:8.0f} {'-':>8}")
            continue
        s, rss, steps, err = measure(side, claim, method, sl)
        if s is None:
            print(f"{name:28} {side:5} {ps:8.3g} {'failed':>8} {err}")
            continue
        print(f"{name:28} {side:5} {ps:8.3g} {s:8.3g} {ps / max(s, 1e-3):6.2f} {pm / 2**20:8.0f} "
              f"{rss / 2**20:8.0f} {pm / rss:6.2f}", flush=True)
        if a.steps:
            print("      " + ", ".join(f"{k} {v['seconds']:.3g}/{steps[k]:.3g} s" for k, v in psteps.items() if k in steps))
    print(f"(child CPU of the replay alone; peak RSS of the whole child; max RSS of this process "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB)")


if __name__ == "__main__":
    main()
