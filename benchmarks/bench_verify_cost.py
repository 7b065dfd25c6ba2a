"""The verifier's cost model against measured replays (docs/verifier.md, "Cost model").

Each case is replayed in its own process (upper side `replay`, lower side `replay_lower`); the
table shows predicted and measured CPU seconds and peak resident memory, and their ratios
(predicted / measured: above 1 means the model errs high, as it should; --steps: per step).
Cases: the fixture method of tests/verifier_fixtures.py varied in one parameter at a time (grid,
precision, bits, eta, k range, E, M), hostile parameters, the committed certificates
(`--committed`) and any certificate file (`--cert`).

    python benchmarks/bench_verify_cost.py [--committed] [--cert FILE ...] [--only SUBSTRING] [--steps] [--small]
                                           [--json OUT.jsonl]
    python benchmarks/bench_verify_cost.py --recorded

`--recorded`: no replay; the gate's calibrated prediction against the whole verifications recorded in
benchmarks/data/verify_cost.json, and the medians CALIBRATION in verifier/cost.py is set from.

`--small`: the two fixture cases only (upper and lower side, seconds), to check the benchmark runs.

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
from verifier.format.schema import typed as typed_as  # noqa: E402
from verifier.format.statement import FORMATS  # noqa: E402
from verifier.format.v1 import SCHEMA  # noqa: E402
from verifier.format.v2 import SCHEMA_V2  # noqa: E402

CHILD = """
import json, resource, sys, time
time.perf_counter = time.process_time  # the replay's step timings in CPU seconds
sys.path[:0] = [{root!r}, {root!r} + "/benchmarks"]
from bench_verify_cost import typed  # noqa: E402
from verifier.replay.lower_v2 import replay_lower_v2
from verifier.replay.upper_v1 import replay
from verifier.replay.upper_v2 import replay_v2
from verifier.replay.lower_v1 import replay_lower
side, claim, method, sigma_low, ptype = json.loads(sys.argv[1])
c, m, s = typed(side, claim, method, sigma_low, ptype)
t0 = time.process_time()
if side == "upper":
    r = (replay if m["version"] == 1 else replay_v2)(c, m)
elif m["version"] == 1:
    r = replay_lower(c["steps"], c["epochs"], s, m)
else:
    r = replay_lower_v2(c, s, m)
print(json.dumps([time.process_time() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, r.seconds]))
"""


def typed(side, claim, method, sigma_low, ptype=None):
    """Claim, method (exact rationals) and sigma_low through the schema of their format: v3 when
    the claim names its scheme (method v1 or v2), else v1/v2; with a predicateType, `claim` is the
    whole predicate, typed and checked as the verifier does."""
    if ptype is not None:
        typed_p, check = FORMATS[ptype]
        p = typed_p(claim)
        check(p)
        return p["claim"], p["method"] if side == "upper" else p["lower"]["method"], p.get("lower", {}).get("sigma_low")
    if "scheme" in claim:
        sch = v3.schema({"claim": claim, "method": method} if side == "upper"
                               else {"claim": claim, "method": {"name": "lemma-c5-rounding", "version": 1},
                                     "lower": {"method": method}})
        ms = sch["method"] if side == "upper" else sch["lower"]["method"]
        cs = sch["claim"]
    else:
        cs, ms = SCHEMA["claim"], SCHEMA["method"] if side == "upper" else SCHEMA_V2["lower"]["method"]
    s = None if sigma_low is None else typed_as(sigma_low, "decimal", "s")
    return typed_as(claim, cs, "c"), typed_as(method, ms, "m"), s


def measure(side, claim, method, sigma_low=None, ptype=None, timeout=3600):
    arg = json.dumps([side, claim, method, sigma_low, ptype])
    r = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT)), arg], capture_output=True,
                       text=True, timeout=timeout)
    if r.returncode:
        return None, None, r.stderr.strip().splitlines()[-1][:60], {}
    return json.loads(r.stdout) + [""]


def predict(side, claim, method, sigma_low=None, ptype=None):
    c, m, s = typed(side, claim, method, sigma_low, ptype)
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
        st = json.loads(base64.b64decode(json.load(open(f))["payload"]))
        p, name = st["predicate"], Path(f).stem
        if p["method"]["name"] == "gaussian-shift":  # closed forms: nothing to measure
            continue
        if "stages" in p["claim"]:  # the replays of a run in stages are not these two
            print(f"{name}: a run in stages, skipped", file=sys.stderr)
            continue
        if st.get("predicateType") is None:
            yield name, "upper", p["claim"], p["method"], None
            if "lower" in p:
                yield name, "lower", p["claim"], p["lower"]["method"], p["lower"]["sigma_low"]
            continue
        for side in ("upper", "lower") if "lower" in p else ("upper",):  # typed as the verifier types it
            yield name, side, p, None, None, st["predicateType"]


RECORDED = ROOT / "benchmarks" / "data" / "verify_cost.json"


def recorded_rows(path=RECORDED):
    """(cell, typed predicate, CPU s, peak RSS MB) of the recorded whole verifications (`sigmacert-verify`, wait4):
    a kinds-grid cell's predicate from benchmarks/data/kinds_grid.json, any other from the record itself."""
    kinds = {c["cell"]: c for c in json.loads((ROOT / "benchmarks" / "data" / "kinds_grid.json").read_text())["cells"]}
    out = []
    for r in json.loads(Path(path).read_text())["whole"]:
        src = r if "predicate" in r else kinds[r["cell"]]
        typed_p, check = FORMATS[src["predicate_type"]]
        p = typed_p(src["predicate"])
        check(p)
        out.append((r["cell"], p, r["cpu"], r["mb"]))
    return out


def recorded(path=RECORDED):
    """The gate's prediction (verifier.cost.predict, calibrated) against the recorded whole verifications, and per
    CALIBRATION group the median raw / measured: the factors CALIBRATION should hold."""
    from statistics import median

    from verifier.cost import calibration_key, predict, raw_predict
    print(f"{'cell':30} {'group':6} {'cpu s':>7} {'pred s':>7} {'ratio':>6} {'MB':>6} {'pred MB':>7} {'ratio':>6}")
    groups = {}
    for cell, p, cpu, mb in recorded_rows(path):
        raw, cal = raw_predict(p), predict(p)
        g = groups.setdefault(calibration_key(p), ([], []))
        g[0].append(raw.seconds / cpu)
        g[1].append((BASE_MEMORY + raw.memory) / 1e6 / mb)
        pm = (BASE_MEMORY + cal.memory) / 1e6
        print(f"{cell:30} {calibration_key(p):6} {cpu:7.2f} {cal.seconds:7.2f} {cal.seconds / cpu:6.2f} {mb:6.0f} "
              f"{pm:7.0f} {pm / mb:6.2f}")
    print("raw / measured, median by group (seconds, peak):",
          {k: (round(median(s), 2), round(median(m), 2), len(s)) for k, (s, m) in groups.items()})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--committed", action="store_true", help="also the nine committed certificates (minutes)")
    ap.add_argument("--cert", action="append", default=[], help="also this certificate file (repeatable)")
    ap.add_argument("--only", default="", help="cases whose name contains this")
    ap.add_argument("--steps", action="store_true", help="predicted / measured CPU seconds of each step")
    ap.add_argument("--small", action="store_true", help="the two fixture cases (seconds): checks the benchmark runs")
    ap.add_argument("--json", help="append each measured case here, a JSON line (case, side, claim, methods, measured "
                                   "CPU s, peak RSS bytes, per-step CPU s): the model can be refitted without replaying")
    ap.add_argument("--recorded", action="store_true", help="no replays: the calibrated gate against the recorded "
                                                              "whole verifications of benchmarks/data/verify_cost.json")
    a = ap.parse_args()
    if a.recorded:
        return recorded()
    files = sorted(glob.glob(str(ROOT / "artifacts" / "certificates" / "*.json"))) if a.committed else []
    cases = list(synthetic()) + list(certificates(files + a.cert))
    if a.small:
        cases = [c for c in cases if c[0] in ("fixture", "lower fixture")]
    print(f"{'case':28} {'side':5} {'pred s':>8} {'cpu s':>8} {'ratio':>6} {'pred MB':>8} {'rss MB':>8} {'ratio':>6}")
    for name, side, claim, method, sl, *pt in cases:
        if a.only not in name:
            continue
        pt = pt[0] if pt else None
        ps, pm, psteps = predict(side, claim, method, sl, pt)
        if ps > 600 or pm > 6 << 30:  # what the verifier refuses by default is not run here
            print(f"{name:28} {side:5} {ps:8.3g} {'-':>8} {'':6} {pm / 2**20:8.0f} {'-':>8}")
            continue
        s, rss, steps, err = measure(side, claim, method, sl, pt)
        if s is None:
            print(f"{name:28} {side:5} {ps:8.3g} {'failed':>8} {err}")
            continue
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps({"case": name, "side": side, "claim": claim, "method": method, "sigma_low": sl,
                                    "ptype": pt, "cpu": round(s, 3), "rss": rss, "steps": steps}) + "\n")
        print(f"{name:28} {side:5} {ps:8.3g} {s:8.3g} {ps / max(s, 1e-3):6.2f} {pm / 2**20:8.0f} "
              f"{rss / 2**20:8.0f} {pm / rss:6.2f}", flush=True)
        if a.steps:
            print("      " + ", ".join(f"{k} {v['seconds']:.3g}/{steps[k]:.3g} s" for k, v in psteps.items() if k in steps))
    print(f"(child CPU of the replay alone; peak RSS of the whole child; max RSS of this process "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB)")


if __name__ == "__main__":
    main()
