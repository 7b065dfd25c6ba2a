"""Fuzzing: real certificates mutated at random (numbers, strings, nesting, sizes), signed with
the test key so the signature is no barrier.  Every verification must end in ACCEPT or in a
REJECT with a documented reason (never internal-error, never a cap of the capped child), within
the time and memory caps of the CLI's child process."""
from __future__ import annotations

import copy
import re
import sys
import time
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from verifier_fixtures import predicate_v2, sign_statement, statement, statement_v2  # noqa: E402

from verifier import verify_bytes  # noqa: E402
from verifier.cli import run_capped  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KEY = Ed25519PrivateKey.generate()
BASE = predicate_v2()
DOCUMENTED = set(re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)+)`", (ROOT / "docs" / "verifier.md").read_text()))
SEEN: dict = {}


def nodes(x, path=()):
    yield path
    if isinstance(x, dict):
        for k, v in x.items():
            yield from nodes(v, path + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from nodes(v, path + (i,))


PATHS = [p for p in nodes(BASE) if p]
# the parameters that drive the arithmetic, four times as often as the rest
WEIGHTED = PATHS + 3 * [p for p in PATHS if p[0] in ("claim", "method", "bound") or p[:2] == ("lower", "method")]
decimals = st.from_regex(r"-?[0-9]{1,20}(\.[0-9]{1,20})?([eE]-?[0-9]{1,3})?", fullmatch=True)
numbers = st.one_of(st.integers(-(10**40), 10**40), st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from([0, 1, -1, 2**20, 2**31, 2**63, 10**6 + 1, 10**9]))
balls = st.builds(lambda m, r: f"[{m} +/- {r}]", decimals, decimals)
leaves = st.one_of(numbers, decimals, balls, st.text(max_size=30), st.booleans(), st.none())


def perturb(old, n: int):
    """A value of the same type near (or far from) the old one."""
    k = n % 13 - 6
    if isinstance(old, bool) or old is None:
        return not old
    if isinstance(old, int):
        return (old + k, old * 10 ** abs(k), -old, old // 2, 2**40 * old)[n % 5]
    if isinstance(old, float):
        return old * 10.0**k
    if isinstance(old, str) and re.fullmatch(r"[0-9]+(\.[0-9]+)?", old):
        return (f"{old}e{k}", old + "7", old[:-1] or "0", "0")[n % 4]  # times 10^k, a digit more or less
    ball = re.fullmatch(r"\[(.*) \+/- (.*)\]", old) if isinstance(old, str) else None
    if ball:
        mid, rad = ball[1], ball[2]
        return (f"[{mid}e{k} +/- {rad}]", f"[{mid} +/- {rad}e{abs(k)}]", f"[-{mid} +/- {rad}]")[n % 3]
    if isinstance(old, str):
        return (old + old, old[:-1], old.upper())[n % 3]
    if isinstance(old, list):
        return (old * 30)[: n % 40]
    if isinstance(old, dict) and old:
        return {k: v for i, (k, v) in enumerate(old.items()) if i != n % len(old)}
    return old


def mutate(p, path, action, value, n):
    *head, last = path
    d = p
    for k in head:
        d = d[k]
    if action == "perturb":
        d[last] = perturb(d[last], n)
    elif action == "replace":
        d[last] = value
    elif action == "delete" and isinstance(d, dict):
        del d[last]
    elif action == "add" and isinstance(d[last], dict):
        d[last]["extra"] = value
    elif action == "wrap":
        d[last] = [d[last]] if n % 2 else {"x": d[last]}


def test_mutated_certificates_end_with_a_documented_reason():
    fuzz()
    assert len(SEEN) >= 8 and sum(SEEN.values()) >= 60, SEEN  # the mutations reach beyond the schema


@settings(max_examples=150, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(edits=st.lists(st.tuples(st.sampled_from(WEIGHTED),
                                st.sampled_from(["perturb"] * 4 + ["replace", "delete", "add", "wrap"]),
                                leaves, st.integers(0, 10**6)), min_size=1, max_size=3),
       v1=st.booleans())
def fuzz(edits, v1):
    p = copy.deepcopy(BASE)
    if v1:
        for k in ("lower", "privacy", "tpr"):
            p.pop(k)
    for path, action, value, n in edits:
        try:
            mutate(p, path, action, value, n)
        except (KeyError, IndexError, TypeError):
            pass  # an earlier edit removed or replaced the node
    try:
        data = sign_statement((statement if v1 else statement_v2)(p), KEY)
    except (ValueError, TypeError):
        return  # not JSON-serialisable (e.g. a float out of range)
    t = time.perf_counter()
    r = run_capped(lambda: verify_bytes(data, [KEY.public_key()], max_memory=1 << 30, max_seconds=20),
                   2 << 30, 60)
    assert time.perf_counter() - t < 60
    assert r.reason not in ("internal-error", "memory-exhausted", "time-exhausted"), (edits, r.reason, r.detail)
    assert r.accepted == (r.reason == "accepted")
    assert r.reason == "accepted" or r.reason in DOCUMENTED, (r.reason, "is not in docs/verifier.md")
    SEEN[r.reason] = SEEN.get(r.reason, 0) + 1



def test_random_methods_end_with_a_documented_reason():
    """The method's numbers drawn at random, sane to wild (the replay's corner cases: empty or
    one-point supports, huge cells, tiny grids), each verified under a small budget."""
    SEEN.clear()
    methods()
    assert "replay-bound-exceeds" in SEEN and "cost-exceeds-limit" in SEEN, SEEN


decimal_of = lambda lo, hi: st.builds(lambda d, e: f"{d}e{e}", st.integers(1, 9), st.integers(lo, hi))


@settings(max_examples=50, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(M=st.sampled_from([1, 2, 3, 5, 12, 17, 100]), E=st.sampled_from([1, 2, 3, 10]),
       sigma=st.sampled_from(["0.3", "1.5", "5"]), h=decimal_of(-3, 0), n=st.integers(1, 3000),
       tail=st.integers(0, 3), T=st.sampled_from(["cap", "8M", "M", "0.5"]), grow=st.lists(st.sampled_from(
           [1, 1, 2, 3]), min_size=7, max_size=7), eta=decimal_of(-5, 9), km=st.integers(-10**6, 60),
       width=st.sampled_from([1, 5, 100, 3000, 10**7]), prec=st.sampled_from([8, 30, 100, 1000]),
       bits=st.sampled_from([8, 20, 80, 300]), trim=st.sampled_from(["0", "1e-20", "0.01", "0.5"]))
def methods(M, E, sigma, h, n, tail, T, grow, eta, km, width, prec, bits, trim):
    p = copy.deepcopy(BASE)
    for k in ("lower", "privacy", "tpr"):
        p.pop(k)
    hq = float(h)
    cap = f"{hq * n:.12g}"
    sched = [1]
    for g in grow[: M.bit_length() - 1]:
        sched.append(sched[-1] * g)
    p["claim"].update(steps=M, epochs=E, sigma=sigma)
    p["method"].update(h=h, cap=cap, tail_start=f"{hq * max(n // 2**tail, 1):.12g}", tail_step=h,
                       truncation={"cap": cap, "8M": str(8 * M), "M": str(M), "0.5": "0.5"}[T],
                       lattice_schedule=sched, eta=eta, k_minus=km, k_plus=km + width, prec=prec,
                       fixed_point_bits=bits, trim=trim)
    data = sign_statement(statement(p), KEY)
    r = run_capped(lambda: verify_bytes(data, [KEY.public_key()], max_memory=512 << 20, max_seconds=0.5),
                   2 << 30, 30)
    assert r.reason not in ("internal-error", "memory-exhausted", "time-exhausted"), (p["method"], r.reason, r.detail)
    assert r.reason == "accepted" or r.reason in DOCUMENTED, (r.reason, "is not in docs/verifier.md")
    SEEN[r.reason] = SEEN.get(r.reason, 0) + 1
