"""verify_file / verify_bytes: envelope -> Statement -> replay -> ACCEPT or REJECT."""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

from flint import arb, fmpq

from .envelope import MAX_BYTES, load_public_key, open_envelope
from .replay import _dyadic, replay
from .statement import parse_statement
from .strict import Reject, working_prec


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

    def as_dict(self) -> dict:
        return {"result": "ACCEPT" if self.accepted else "REJECT", **self.__dict__}


def round_up(q: fmpq, digits: int) -> str:
    """q >= 0 rounded up to `digits` significant digits, as a plain decimal string."""
    if q <= 0:
        return "0"
    e = 0
    while q >= fmpq(10) ** (e + 1):
        e += 1
    while q < fmpq(10) ** e:
        e -= 1
    k = e - digits + 1
    n = int((q / fmpq(10) ** k).ceil())
    if k >= 0:
        return str(n * 10**k)
    s = str(n).rjust(-k + 1, "0")
    return s[:k] + "." + s[k:]


def _upper(x: arb) -> fmpq:
    return fmpq(_dyadic(x, True, 400), 2**400)


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


def verify_bytes(data: bytes, keys: list, subject_digest: str | None = None) -> Result:
    t0 = time.perf_counter()
    res = Result(False, "internal-error", "")
    try:
        payload, res.keyid = open_envelope(data, keys)
        raw, p = parse_statement(payload, subject_digest)
        res.claim, res.recorded_bound = raw["claim"], raw["bound"]
        c, m, enc = p["claim"], p["method"], p["enclosures"]
        with working_prec(400):
            rec_top = _upper(1 - enc["O"])  # `bound` is the upper end of 1 - O, rounded up
        if rec_top > p["bound"]:
            raise Reject("bound-inconsistent", f"recorded bound {raw['bound']} is below the upper end "
                         f"of 1 - O from the recorded O {raw['enclosures']['O']}")
        rp = replay(c, m)  # Lemma C.5 (i)-(iv) from claim and method alone
        res.replayed_bound, res.replay_seconds = round_up(rp.bound, 13), rp.seconds
        if rp.bound > p["bound"]:
            raise Reject("replay-bound-exceeds", f"replayed 1 - O = {res.replayed_bound} > recorded "
                         f"bound {raw['bound']}: the mathematics does not certify this claim")
        # Two correct replays differ only by optional deletions (trim, floors), amplified at
        # most M*E times; beyond that slack (and 1e-12) a recorded enclosure is wrong.
        nprod = 2 * (c["steps"].bit_length() + c["epochs"].bit_length())
        width = m["truncation"] / m["h"] + m["cap"] / m["h"] + (m["k_plus"] - m["k_minus"]) * c["epochs"]
        tol = fmpq(1, 10**12) + 2 * c["steps"] * c["epochs"] * nprod * (
            m["trim"] + width / fmpq(2) ** m["fixed_point_bits"])
        with working_prec(400):
            res.mismatches = _compare(enc, rp.enclosures, tol)
        if res.mismatches:
            raise Reject("enclosure-mismatch", "recorded enclosures disagree with the replay: "
                         + "; ".join(res.mismatches))
        res.accepted, res.reason = True, "accepted"
        res.detail = (f"TV <= {raw['bound']} <= target {raw['claim']['target']} at sigma "
                      f"{raw['claim']['sigma']}, M={c['steps']}, E={c['epochs']} (replayed {res.replayed_bound})")
    except Reject as r:
        res.reason, res.detail = r.reason, r.detail
    except Exception as e:  # a certificate that breaks the replay is rejected, never a traceback
        res.reason, res.detail = "internal-error", f"replay failed: {type(e).__name__}: {e}"
    res.seconds = time.perf_counter() - t0
    return res


def read_limited(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read(MAX_BYTES + 1)


def verify_file(path: str, public_keys, subject: str | None = None) -> Result:
    """Verify the certificate at `path` against PEM public keys (paths or bytes or key objects).

    Raises OSError/ValueError for unreadable files or keys (usage errors); every problem
    with the certificate itself is a Result with accepted=False and a reason."""
    keys = []
    for k in public_keys:
        if isinstance(k, (bytes, str)):
            k = load_public_key(k if isinstance(k, bytes) else read_limited(k))
        keys.append(k)
    digest = None
    if subject is not None:
        with open(subject, "rb") as f:
            h = hashlib.sha256()
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        digest = h.hexdigest()
    return verify_bytes(read_limited(path), keys, digest)
