"""verify_file / verify_bytes: envelope -> Statement -> cost -> replay -> ACCEPT or REJECT."""
from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass, field

from flint import arb, fmpq

from .cost import DEFAULT_MAX_MEMORY, DEFAULT_MAX_SECONDS, check_budget, predict
from .format.envelope import MAX_BYTES, load_public_key, open_envelope
from .format.statement import parse_statement
from .format.strict import Reject, decimal, working_prec
from .replay import gaussian_shift as gs
from .replay.lower_v1 import deltas, replay_lower
from .replay.lower_v2 import replay_lower_v2, slack_lower
from .replay.upper_v1 import _dyadic, replay
from .replay.upper_v2 import LOOSE, replay_v2
from .replay.upper_v2 import slack as slack_v2


@dataclass
class Result:
    accepted: bool
    reason: str  # "accepted" or a stable rejection code (docs/verifier.md)
    detail: str
    replayed_bound: str | None = None  # our upper bound on TV, rounded up to 13 digits
    recorded_bound: str | None = None
    claim: dict | None = None
    keyid: str | None = None
    mismatches: list = field(default_factory=list)
    seconds: float = 0.0
    replay_seconds: dict | None = None
    replayed_lower: str | None = None  # format v2: our lower bound on TV at sigma_low, rounded down
    derived: dict | None = None  # format v2: our delta bounds at the recorded epsilons, TPR bounds
    cost: dict | None = None  # the cost model's prediction: seconds, peak memory (bytes), per step

    def as_dict(self) -> dict:
        return {"result": "ACCEPT" if self.accepted else "REJECT", **self.__dict__}


def round_up(q: fmpq, digits: int, up: bool = True) -> str:
    """q >= 0 rounded up (or down) to `digits` significant digits, as a plain decimal string."""
    if q <= 0:
        return "0" if up or q == 0 else "-" + round_up(-q, digits)
    e = 0
    while q >= fmpq(10) ** (e + 1):
        e += 1
    while q < fmpq(10) ** e:
        e -= 1
    k = e - digits + 1
    n = int((q / fmpq(10) ** k).ceil() if up else (q / fmpq(10) ** k).floor())
    if k >= 0:
        return str(n * 10**k)
    s = str(n).rjust(-k + 1, "0")
    return s[:k] + "." + s[k:]


def _upper(x: arb) -> fmpq:
    return fmpq(_dyadic(x, True, 400), 2**400)


def slack(M: int, E: int, m: dict, width: fmpq, products: int) -> fmpq:
    """How far two correct replays may differ: only by their optional deletions (trimming <= trim
    and fixed-point floors <= width 2^-F per product), amplified at most M E times."""
    return 2 * M * E * products * (m["trim"] + width / fmpq(2) ** m["fixed_point_bits"])


def _compare(rec: dict, mine: dict, tol: fmpq, path="enclosures") -> list:
    """Names whose recorded ball and replayed value differ by more than radii + tol."""
    out = []
    for k, r in rec.items():
        m = mine[k]
        if isinstance(r, dict):
            out += _compare(r, m, tol, f"{path}.{k}")
            continue
        m = m if isinstance(m, arb) else arb(m)
        gap = (r - m).abs_lower()  # max(0, |mid_r - mid_m| - rad_r - rad_m)
        if gap > arb(tol):
            out.append(f"{path}.{k}: recorded {r.str(12, radius=True)}, replayed {m.str(12, radius=True)}")
    return out


def verify_bytes(data: bytes, keys: list, subject_digest: str | None = None, *,
                 max_memory: float | None = None, max_seconds: float | None = None) -> Result:
    """Verify a DSSE envelope against Ed25519 public keys.  The replay runs only if the cost
    model's prediction fits max_memory (bytes) and max_seconds (None: the defaults
    DEFAULT_MAX_MEMORY, DEFAULT_MAX_SECONDS); above them the reason is `cost-exceeds-limit`."""
    t0 = time.perf_counter()
    res = Result(False, "internal-error", "")
    try:
        payload, res.keyid = open_envelope(data, keys)
        raw, p = parse_statement(payload, subject_digest)
        res.claim, res.recorded_bound = raw["claim"], raw["bound"]
        cost = predict(p)
        res.cost = cost.as_dict()
        check_budget(cost, DEFAULT_MAX_MEMORY if max_memory is None else max_memory,
                     DEFAULT_MAX_SECONDS if max_seconds is None else max_seconds)
        c, m, enc = p["claim"], p["method"], p["enclosures"]
        if m["name"] == gs.NAME:  # M = 1: closed forms, nothing deleted, no slack
            rp = gs.replay(c, c["sigma"], m)
            tol, deltas_at = fmpq(0), rp.deltas
        else:
            rp = (replay if m["version"] == 1 else replay_v2)(c, m)  # Lemma C.5 from claim and method alone
            deltas_at = lambda eps: deltas(rp.b, rp.F, m["eta"], eps)
        res.replayed_bound, res.replay_seconds = round_up(rp.bound, 13), rp.seconds
        if rp.bound > p["bound"]:
            raise Reject("replay-bound-exceeds", f"replayed upper bound on TV {res.replayed_bound} > recorded "
                         f"bound {raw['bound']}: the mathematics does not certify this claim")
        # Two correct replays differ only by optional deletions (trim, floors), amplified at most
        # M*E times; beyond that slack a recorded enclosure is wrong.
        if m["name"] == gs.NAME:
            with working_prec(400):
                res.mismatches = _compare(enc, rp.enclosures, tol)
        elif m["version"] == 1:
            width = m["truncation"] / m["h"] + m["cap"] / m["h"] + (m["k_plus"] - m["k_minus"]) * c["epochs"]
            tol = slack(c["steps"], c["epochs"], m, width, 2 * (c["steps"].bit_length() + c["epochs"].bit_length()))
            with working_prec(400):
                res.mismatches = _compare(enc, rp.enclosures, tol)
        else:
            tol, loose = slack_v2(c, m, rp)
            strict = {k: {kk: x for kk, x in v.items() if (k, kk) not in LOOSE} if isinstance(v, dict) else v
                      for k, v in enc.items()}
            with working_prec(400):
                res.mismatches = _compare(strict, rp.enclosures, tol) + _compare(
                    {a: {b: enc[a][b]} for a, b in LOOSE}, rp.enclosures, loose)
        if res.mismatches:
            raise Reject("enclosure-mismatch", "recorded enclosures disagree with the replay: "
                         + "; ".join(res.mismatches))
        res.detail = (f"TV <= {raw['bound']} <= target {raw['claim']['target']} at sigma "
                      f"{raw['claim']['sigma']}, M={c['steps']}, E={c['epochs']} (replayed {res.replayed_bound})")
        if c.get("scheme") == "fixed-bins":
            res.detail += f" in fixed bins ({c['iterations']} iterations)"
        if "lower" in p:
            _verify_lower(p, raw, res)
        if "privacy" in p:
            _verify_rows(p, raw, deltas_at, tol, res)
        res.accepted, res.reason = True, "accepted"
    except Reject as r:
        res.reason, res.detail = r.reason, r.detail
    except MemoryError:
        res.reason, res.detail = "memory-exhausted", "the replay ran out of memory (cost model: " \
            f"{res.cost and res.cost['memory']} bytes predicted)"
    except Exception as e:  # a certificate that breaks the replay is rejected, never a traceback
        res.reason, res.detail = "internal-error", f"replay failed: {type(e).__name__}: {e}"
    res.seconds = time.perf_counter() - t0
    return res


def _verify_lower(p, raw, res):
    """docs/two-sided.md §1 (lower method v1), method-v2.md §4 (v2): replay the lower bound."""
    c, lo = p["claim"], p["lower"]
    v1 = lo["method"]["name"] != gs.NAME and lo["method"]["version"] == 1  # data-processing-lower v1
    if lo["method"]["name"] == gs.NAME:
        lr = gs.replay(c, lo["sigma_low"], lo["method"], upper=False)
    elif v1:
        lr = replay_lower(c["steps"], c["epochs"], lo["sigma_low"], lo["method"])
    else:
        lr = replay_lower_v2(c, lo["sigma_low"], lo["method"])
    res.replayed_lower, res.replay_seconds["lower"] = round_up(lr.bound, 13, up=False), lr.seconds
    if lr.bound <= c["target"]:
        raise Reject("lower-replay-not-above-target", f"replayed lower bound {res.replayed_lower} on TV at "
                     f"sigma_low {raw['lower']['sigma_low']} does not exceed the target {raw['claim']['target']}")
    if lr.bound < lo["tv_lower"]:
        raise Reject("lower-replay-below-recorded", f"replayed lower bound {res.replayed_lower} is below "
                     f"the recorded tv_lower {raw['lower']['tv_lower']}")
    if lo["method"]["name"] == gs.NAME:
        tol, mine = fmpq(0), lr.enclosures
    elif v1:
        m = lo["method"]
        width = 8 * c["steps"] / m["h"] + m["cap"] / m["h"] + (m["b_max"] - m["b_min"]) * c["epochs"]
        tol, mine = slack(c["steps"], c["epochs"], m, width, 5 * c["steps"].bit_length()
                          + 4 * c["epochs"].bit_length()), None
    else:
        tol, mine = slack_lower(c, lo["method"]), {"W_A": lr.W_A, "U_A": lr.U_A, "deleted_p": lr.deleted_p}
    with working_prec(400):
        if v1:
            bad = _compare_v1_lower(lo["enclosures"], lr, tol)
        else:
            bad = _compare(lo["enclosures"], mine, tol, "lower.enclosures")
    if bad:
        res.mismatches += bad
        raise Reject("lower-enclosure-mismatch", "recorded lower enclosures disagree with the replay: "
                     + "; ".join(bad))
    res.detail += (f"; TV > {raw['lower']['tv_lower']} > target at sigma_low {raw['lower']['sigma_low']} "
                   f"(replayed {res.replayed_lower})")


def _compare_v1_lower(rec: dict, lr, tol: fmpq) -> list:
    """Lower method v1 (two-sided.md §1) leaves the bucket map free: buckets come from float logs,
    and sums near a bucket edge may land on either side, so two correct replays reach different
    (both valid) W_A, U_A.  What a certificate may not do is record more than the replay proves:
    the recorded W_A - U_A - deleted_p must not exceed ours by more than the radii and tol, and
    deleted_p must agree.  (Seen: W_A - U_A recorded 0.100000000259, replayed 0.100000000396.)"""
    out = []
    r, m = rec["W_A"] - rec["U_A"] - rec["deleted_p"], arb(lr.W_A - lr.U_A - lr.deficit)
    if (r - m).lower() > arb(tol):
        out.append(f"lower.enclosures.W_A - U_A - deleted_p: recorded {r.str(12, radius=True)}, above the "
                   f"replayed {m.str(12, radius=True)}")
    return out + _compare({"deleted_p": rec["deleted_p"]}, {"deleted_p": lr.deficit}, tol, "lower.enclosures")


def _verify_rows(p, raw, deltas_at, tol, res):
    """docs/two-sided.md §2-3, method-v2.md §5: the privacy and TPR rows from our own deltas."""
    m, rows = p["method"], {}
    res.derived = rows  # filled as we go, so a rejection shows the rows replayed so far
    worst = lambda eps: max(_upper(x) for x in deltas_at(eps))
    with working_prec(max(200, m["prec"])):
        grid = p["privacy"]["epsilon_grid"]
        for d, row in p["privacy"]["epsilon_at_delta"].items():
            delta, eps = decimal(d, d), row["epsilon"]
            dqp, dpq = deltas_at(eps)
            rows[d] = {"epsilon": raw["privacy"]["epsilon_at_delta"][d]["epsilon"],
                       "delta_qp": round_up(_upper(dqp), 13), "delta_pq": round_up(_upper(dpq), 13)}
            if max(_upper(dqp), _upper(dpq)) > delta:
                raise Reject("privacy-epsilon-too-small", f"at epsilon {rows[d]['epsilon']} the replayed "
                             f"bounds on delta are {rows[d]['delta_qp']} (Q||P), {rows[d]['delta_pq']} "
                             f"(P||Q); not both <= {d}")
            bad = _compare({k: row[k] for k in ("delta_qp", "delta_pq")}, {"delta_qp": dqp, "delta_pq": dpq},
                           tol, f"privacy.epsilon_at_delta.{d}")
            if bad:
                raise Reject("privacy-mismatch", "recorded deltas disagree with the replay: " + "; ".join(bad))
            if eps >= grid and worst(eps - grid) + tol <= delta:  # every correct replay certifies eps - grid
                raise Reject("privacy-epsilon-not-minimal", f"epsilon {rows[d]['epsilon']} at delta {d} is not "
                             f"the smallest on the grid: at epsilon - {raw['privacy']['epsilon_grid']} the "
                             f"replayed bounds are <= {round_up(worst(eps - grid), 13)}, below delta by more "
                             f"than the slack {round_up(tol, 3)}")
        for a, row in p["tpr"].items():
            dqp = deltas_at(row["epsilon"])[0]
            bound = _upper(arb(row["epsilon"]).exp() * arb(decimal(a, a)) + dqp)
            rows[f"tpr@{a}"] = round_up(bound, 13)
            if row["tpr"] < bound:
                raise Reject("tpr-too-small", f"recorded TPR {raw['tpr'][a]['tpr']} at FPR {a} is below the "
                             f"replayed bound {rows[f'tpr@{a}']} (epsilon {raw['tpr'][a]['epsilon']})")
    res.detail += "; privacy and TPR rows replayed"


def read_limited(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read(MAX_BYTES + 1)


def subject_digest(path: str) -> str:
    """SHA-256 of a regular file, reading no more than the size it had when opened (a device such
    as /dev/zero, a FIFO or a directory is refused with ValueError: it could be read forever)."""
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path} is not a regular file")
        h, left = hashlib.sha256(), st.st_size
        while left > 0:
            chunk = f.read(min(left, 1 << 20))
            if not chunk:
                break
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()


def load_inputs(path: str, public_keys, subject: str | None = None):
    """(certificate bytes, Ed25519 keys, subject digest or None) for verify_bytes.  Keys are PEM
    paths, PEM bytes or key objects.  Raises OSError/ValueError for unreadable files or keys or a
    subject that is not a regular file."""
    keys = []
    for k in public_keys:
        if isinstance(k, (bytes, str)):
            k = load_public_key(k if isinstance(k, bytes) else read_limited(k))
        keys.append(k)
    return read_limited(path), keys, None if subject is None else subject_digest(subject)


def verify_file(path: str, public_keys, subject: str | None = None, *,
                max_memory: float | None = None, max_seconds: float | None = None) -> Result:
    """Verify the certificate at `path` against PEM public keys (see load_inputs).

    Raises OSError/ValueError only for usage errors (load_inputs); every problem with the
    certificate itself is a Result with accepted=False and a reason."""
    return verify_bytes(*load_inputs(path, public_keys, subject), max_memory=max_memory, max_seconds=max_seconds)
