"""verify_file / verify_bytes: envelope -> Statement -> cost -> replay -> ACCEPT or REJECT.

ACCEPT if and only if, in this order (docs/verifier.md "What is checked"; each failure has a reason code):
  1. the envelope is strict DSSE JSON                 (step 1; format/envelope.py)
  2. one signature is Ed25519 by a given key          (step 2; format/envelope.py) - only then is the payload read
  3. the Statement is canonical in-toto, its predicateType known, the subjects' digests right
                                                      (step 3; format/statement.py, table FORMATS)
  4. the predicate has exactly its format's schema and passes the static checks of its claim,
     methods, enclosures and rows                     (steps 4-6; format/v1.py, v2.py, v3.py "What is checked")
  5. the cost model's prediction fits the budget      (step 7; cost.py)
  6. our own replay of the upper method bounds TV by at most the recorded bound, and the recorded
     enclosures agree with ours within the method's slack   (steps 8-9; methods.UPPER, replay/)
  7. if there is a lower side: our replay at sigma_low exceeds the target and tv_lower, and its
     enclosures agree within the slack                (step 10; methods.LOWER)
  8. if there are rows: our deltas certify each epsilon, which is the least on the grid, and each
     TPR bound holds                                  (step 10; _verify_rows)
For a v1 certificate: steps 1-6; for v2 and v3 also 7-8 (v3: docs/verifier.md "Format v3").
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from dataclasses import dataclass, field

from flint import arb, fmpq

from . import audit, kinds, methods
from .cost import DEFAULT_MAX_MEMORY, DEFAULT_MAX_SECONDS, check_budget, predict
from .format.envelope import MAX_BYTES, load_public_key, open_envelope
from .format.stages import where
from .format.statement import parse_statement
from .format.strict import Reject, decimal, working_prec
from .replay.slack import compare, row_slack, upper_end

MAX_DETAIL = 500  # characters of a rejection's detail and of each mismatch


@dataclass
class Result:
    accepted: bool
    reason: str  # "accepted" or a stable rejection code (docs/verifier.md)
    detail: str
    replayed_bound: str | None = None  # our upper bound on TV (every kind), rounded up to 13 digits
    replayed_value: str | None = None  # our upper bound on the claim's functional: TV, or the dp/tpr kind's
    recorded_bound: str | None = None
    claim: dict | None = None
    keyid: str | None = None
    mismatches: list = field(default_factory=list)
    seconds: float = 0.0
    replay_seconds: dict | None = None
    replayed_lower: str | None = None  # format v2: our lower bound on TV at sigma_low, rounded down
    replayed_value_lower: str | None = None  # our lower bound on the claim's functional at sigma_low
    derived: dict | None = None  # format v2: our delta bounds at the recorded epsilons, TPR bounds
    cost: dict | None = None  # the cost model's prediction: seconds, peak memory (bytes), per step
    unchecked_subjects: list = field(default_factory=list)  # file subjects named but not checked (no digest)

    def __post_init__(self):
        self.truncate()

    def truncate(self) -> Result:  # a hostile input must not make the reason megabytes long
        if isinstance(self.detail, str) and len(self.detail) > MAX_DETAIL:
            self.detail = self.detail[:MAX_DETAIL] + f"... ({len(self.detail)} characters)"
        if len(self.mismatches) > 20:
            self.mismatches = [*self.mismatches[:20], f"... and {len(self.mismatches) - 20} more"]
        self.mismatches = [m if len(str(m)) <= MAX_DETAIL else str(m)[:MAX_DETAIL] + "..." for m in self.mismatches]
        return self

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


def verify_bytes(data: bytes, keys: list, subject_digest: str | None = None, *,
                 max_memory: float | None = None, max_seconds: float | None = None) -> Result:
    """Verify a DSSE envelope against Ed25519 public keys.  The replay runs only if the cost
    model's prediction fits max_memory (bytes) and max_seconds (None: the defaults
    DEFAULT_MAX_MEMORY, DEFAULT_MAX_SECONDS); above them the reason is `cost-exceeds-limit`."""
    return _verify(data, keys, subject_digest, max_memory, max_seconds)


def replay_statement(payload: bytes, subject_digest: str | None = None, *,
                     max_memory: float | None = None, max_seconds: float | None = None) -> Result:
    """Replay an unsigned Statement (the payload an envelope would sign) exactly as verify_bytes
    replays a signed one, under the same cost model: what a key holder runs before it signs a
    predicate computed by another machine. `keyid` of the Result is None."""
    return _verify(payload, None, subject_digest, max_memory, max_seconds)


def _verify(data: bytes, keys: list | None, subject_digest, max_memory, max_seconds) -> Result:
    t0 = time.perf_counter()
    res = Result(False, "internal-error", "")
    try:
        if keys is None:  # replay_statement: the bytes are the Statement itself
            if len(data) > MAX_BYTES:
                raise Reject("envelope-too-large", f"{len(data)} bytes > {MAX_BYTES}")
            payload = data
        else:
            payload, res.keyid = open_envelope(data, keys)
        raw, p = parse_statement(payload, subject_digest)
        if "audit" in p:  # format v6: an audit of a claim at its sigma (audit.py)
            audit.verify(p, raw, res, round_up, max_memory, max_seconds)
            res.accepted, res.reason = True, "accepted"
            res.seconds = time.perf_counter() - t0
            return res.truncate()
        res.claim, res.recorded_bound = raw["claim"], raw["bound"]
        cost = predict(p)
        res.cost = cost.as_dict()
        check_budget(cost, DEFAULT_MAX_MEMORY if max_memory is None else max_memory,
                     DEFAULT_MAX_SECONDS if max_seconds is None else max_seconds)
        c, m, enc = p["claim"], p["method"], p["enclosures"]
        method = methods.upper(m, c)
        rp = method.replay(c, m)  # Lemma C.5 (or the closed form) from claim and method alone
        res.replayed_bound, res.replay_seconds = round_up(rp.bound, 13), rp.seconds
        res.replayed_value = res.replayed_bound  # the TV kind; a dp/tpr kind's value replaces it (kinds.py)
        if rp.bound > p["bound"]:
            raise Reject("replay-bound-exceeds", f"replayed upper bound on TV {res.replayed_bound} > recorded "
                         f"bound {raw['bound']}: the mathematics does not certify this claim")
        # Two correct replays differ only by optional deletions (trim, floors), amplified at most
        # M*E times; beyond that slack a recorded enclosure is wrong.
        tol, res.mismatches = method.check(c, m, enc, rp)
        if res.mismatches:
            raise Reject("enclosure-mismatch", "recorded enclosures disagree with the replay: "
                         + "; ".join(res.mismatches))
        res.detail = (f"TV <= {raw['bound']} <= target {raw['claim']['target']} {where(raw['claim'])} "
                      f"(replayed {res.replayed_bound})")
        if c.get("scheme") == "fixed-bins":
            res.detail += f" in fixed bins ({c['iterations']} iterations)"
        if c.get("kind", {}).get("name") in kinds.KIND_FUNCTIONAL:  # format v4: the kind's functional (kinds.py)
            kinds.verify(p, raw, res, method.deltas(rp, m), round_up)
        elif "lower" in p:
            _verify_lower(p, raw, res)
        if "privacy" in p:
            _verify_rows(p, raw, method.deltas(rp, m), tol, res)
        res.accepted, res.reason = True, "accepted"
        if subject_digest is None:  # the statement is about a file that nobody checked: say so
            res.unchecked_subjects = [{"name": s["name"], "sha256": s["digest"]["sha256"]}
                                      for s in json.loads(payload)["subject"] if s["name"] != "claim"]
            if res.unchecked_subjects:
                res.detail += ("; subject " + ", ".join(repr(s["name"]) for s in res.unchecked_subjects)
                               + " NOT checked (give --subject FILE)")
    except Reject as r:
        res.reason, res.detail = r.reason, r.detail
    except MemoryError:
        res.reason, res.detail = "memory-exhausted", "the replay ran out of memory (cost model: " \
            f"{res.cost and res.cost['memory']} bytes predicted)"
    except Exception as e:  # a certificate that breaks the replay is rejected, never a traceback
        res.reason, res.detail = "internal-error", f"replay failed: {type(e).__name__}: {e}"
    res.seconds = time.perf_counter() - t0
    return res.truncate()


def _verify_lower(p, raw, res):
    """docs/two-sided.md §1 (lower method v1), method-v2.md §4 (v2): replay the lower bound."""
    c, lo = p["claim"], p["lower"]
    method = methods.lower(lo["method"], c)
    lr = methods.better_map(method.replay(c, lo["sigma_low"], lo["method"]), lambda r: r.bound >= lo["tv_lower"]
                            and not method.check(c, lo["method"], lo["enclosures"], r)[1])
    res.replayed_lower, res.replay_seconds["lower"] = round_up(lr.bound, 13, up=False), lr.seconds
    res.replayed_value_lower = res.replayed_lower
    if lr.bound <= c["target"]:
        raise Reject("lower-replay-not-above-target", f"replayed lower bound {res.replayed_lower} on TV at "
                     f"sigma_low {raw['lower']['sigma_low']} does not exceed the target {raw['claim']['target']}")
    if lr.bound < lo["tv_lower"]:
        raise Reject("lower-replay-below-recorded", f"replayed lower bound {res.replayed_lower} is below "
                     f"the recorded tv_lower {raw['lower']['tv_lower']}")
    _, bad = method.check(c, lo["method"], lo["enclosures"], lr)
    if bad:
        res.mismatches += bad
        raise Reject("lower-enclosure-mismatch", "recorded lower enclosures disagree with the replay: "
                     + "; ".join(bad))
    res.detail += (f"; TV > {raw['lower']['tv_lower']} > target at sigma_low {raw['lower']['sigma_low']} "
                   f"(replayed {res.replayed_lower})")


def _verify_rows(p, raw, deltas_at, tol, res):
    """docs/two-sided.md §2-3, method-v2.md §5: the privacy and TPR rows from our own deltas."""
    m, rows = p["method"], {}
    rows.update(res.derived or {})  # the kind's replayed values (kinds.py), if any
    res.derived = rows  # filled as we go, so a rejection shows the rows replayed so far
    worst = lambda eps: max(upper_end(x) for x in deltas_at(eps))
    with working_prec(max(200, m["prec"])):
        grid = p["privacy"]["epsilon_grid"]
        for d, row in p["privacy"]["epsilon_at_delta"].items():
            delta, eps = decimal(d, d), row["epsilon"]
            dqp, dpq = deltas_at(eps)
            tol_eps = row_slack(tol, eps)
            rows[d] = {"epsilon": raw["privacy"]["epsilon_at_delta"][d]["epsilon"],
                       "delta_qp": round_up(upper_end(dqp), 13), "delta_pq": round_up(upper_end(dpq), 13)}
            if max(upper_end(dqp), upper_end(dpq)) > delta:
                raise Reject("privacy-epsilon-too-small", f"at epsilon {rows[d]['epsilon']} the replayed "
                             f"bounds on delta are {rows[d]['delta_qp']} (Q||P), {rows[d]['delta_pq']} "
                             f"(P||Q); not both <= {d}")
            bad = compare({k: row[k] for k in ("delta_qp", "delta_pq")}, {"delta_qp": dqp, "delta_pq": dpq},
                           tol_eps, f"privacy.epsilon_at_delta.{d}")
            if bad:
                raise Reject("privacy-mismatch", "recorded deltas disagree with the replay: " + "; ".join(bad))
            if eps >= grid and worst(eps - grid) + tol_eps <= delta:  # every correct replay certifies eps - grid
                raise Reject("privacy-epsilon-not-minimal", f"epsilon {rows[d]['epsilon']} at delta {d} is not "
                             f"the smallest on the grid: at epsilon - {raw['privacy']['epsilon_grid']} the "
                             f"replayed bounds are <= {round_up(worst(eps - grid), 13)}, below delta by more "
                             f"than the slack {round_up(tol_eps, 3)}")
        for a, row in p["tpr"].items():
            dqp = deltas_at(row["epsilon"])[0]
            bound = upper_end(arb(row["epsilon"]).exp() * arb(decimal(a, a)) + dqp)
            rows[f"tpr@{a}"] = round_up(bound, 13)
            if row["tpr"] < bound:
                raise Reject("tpr-too-small", f"recorded TPR {raw['tpr'][a]['tpr']} at FPR {a} is below the "
                             f"replayed bound {rows[f'tpr@{a}']} (epsilon {raw['tpr'][a]['epsilon']})")
    res.detail += "; privacy and TPR rows replayed"


def verify_or_raise(data: bytes, keys: list, subject_digest: str | None = None, *,
                    max_memory: float | None = None, max_seconds: float | None = None) -> Result:
    """The raising twin of verify_bytes: its Result when accepted, else Reject(reason, detail)."""
    res = verify_bytes(data, keys, subject_digest, max_memory=max_memory, max_seconds=max_seconds)
    if not res.accepted:
        raise Reject(res.reason, res.detail)
    return res


def _open_regular(path: str):
    """`path` opened without blocking (a FIFO cannot hang the open); ValueError unless a regular file
    (a device such as /dev/zero, a FIFO or a directory could be read forever)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    f = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        f.close()
        raise ValueError(f"{path} is not a regular file")
    os.set_blocking(fd, True)
    return f


def read_limited(path: str) -> bytes:
    """At most MAX_BYTES + 1 bytes of the regular file `path` (ValueError for any other kind)."""
    with _open_regular(path) as f:
        return f.read(MAX_BYTES + 1)


def subject_digest(path: str) -> str:
    """SHA-256 of a regular file, reading no more than the size it had when opened (a device such
    as /dev/zero, a FIFO or a directory is refused with ValueError: it could be read forever)."""
    with _open_regular(path) as f:
        st = os.fstat(f.fileno())
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
        if isinstance(k, str):
            try:
                k = load_public_key(read_limited(k))
            except ValueError as err:
                raise ValueError(f"key {k}: {err}") from None
        elif isinstance(k, bytes):
            k = load_public_key(k)
        keys.append(k)
    return read_limited(path), keys, None if subject is None else subject_digest(subject)


def verify_file(path: str, public_keys, subject: str | None = None, *,
                max_memory: float | None = None, max_seconds: float | None = None) -> Result:
    """Verify the certificate at `path` against PEM public keys (see load_inputs).

    Raises OSError/ValueError only for usage errors (load_inputs); every problem with the
    certificate itself is a Result with accepted=False and a reason."""
    return verify_bytes(*load_inputs(path, public_keys, subject), max_memory=max_memory, max_seconds=max_seconds)
