"""What the report states about one certificate: the verifier's verdict and the signed numbers.

Verify-then-read: the Statement is read only when the verifier parsed it, i.e. after a
signature by a given key checked (`verifier.Result.claim` is set only then). A rejected
certificate's numbers are kept as "claimed" and never drawn.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from certifier.door import curve_of, load_envelope, read_unverified
from certifier.errors import EnvelopeError
from sigmacert.kinds import certified_sides, claim_kind

DEFAULT_SCHEME = "random-allocation"  # the only scheme of formats v1 and v2 (Section 2)


@dataclass(frozen=True)
class Facts:
    """The page's content. Decimal strings stay as the certificate wrote them."""
    sha256: str
    size: int
    accepted: bool
    reason: str                      # "accepted" or the verifier's rejection code
    detail: str
    keyid: str | None                # the key whose signature checked (None: none did)
    envelope_keyids: tuple = ()      # the keyids the envelope names (claimed, for a rejection)
    replayed_bound: str | None = None
    replayed_lower: str | None = None
    replayed_value: str | None = None        # the verifier's bound on the claim's functional (TV or the kind's)
    replayed_value_lower: str | None = None
    replayed_rows: dict = field(default_factory=dict)  # the verifier's own delta and TPR bounds
    statement: dict | None = None    # read only after a signature checked

    @property
    def verdict(self) -> str:
        return "ACCEPT" if self.accepted else "REJECT"

    @property
    def predicate(self) -> dict:
        return (self.statement or {}).get("predicate", {})

    @property
    def claim(self) -> dict:
        return self.predicate.get("claim", {})

    @property
    def scheme(self) -> str:
        return str(self.claim.get("scheme", DEFAULT_SCHEME))

    @property
    def format_version(self) -> str:
        """The N of the predicate type .../tv-certificate/vN (docs/certificate.md §6, method-v2.md §3)."""
        m = re.search(r"/v(\d+)$", str((self.statement or {}).get("predicateType", "")))
        return m.group(1) if m else "?"

    @property
    def kind(self) -> dict:
        """The claim's target kind ({"name": "tv"} for formats v1-v3; sigmacert.kinds.claim_kind)."""
        return claim_kind(self.claim)

    @property
    def curve(self) -> str | None:
        """The privacy curve the claim's target is a point of (certifier.targets: "profile", "tradeoff"), None
        for a TV claim (or a kind this version does not know)."""
        return curve_of(self.kind)

    @property
    def sides(self) -> dict:
        """kind, upper (<= target at sigma), lower (> target at sigma_low) and sigma_low, as written."""
        return certified_sides(self.predicate)

    @property
    def two_sided(self) -> bool:
        return "lower" in self.predicate

    @property
    def epsilon_rows(self) -> list[tuple[str, dict]]:
        """(delta, row) for the certified (eps, delta) rows, largest delta first (two-sided.md §2)."""
        rows = self.predicate.get("privacy", {}).get("epsilon_at_delta", {})
        return sorted(rows.items(), key=lambda kv: -float(kv[0]))

    @property
    def tpr_rows(self) -> list[tuple[str, dict]]:
        """(FPR alpha, row) for the certified TPR bounds, largest alpha first (two-sided.md §3)."""
        return sorted(self.predicate.get("tpr", {}).items(), key=lambda kv: -float(kv[0]))


def envelope_keyids(data: bytes) -> tuple:
    """The keyids an envelope names, without trusting them; () when it does not parse."""
    try:
        return tuple(str(s["keyid"]) for s in load_envelope(data)["signatures"])
    except EnvelopeError:
        return ()


def read_facts(data: bytes, result) -> Facts:
    """Facts from the envelope bytes and the independent verifier's `Result` for them."""
    statement = None
    if result.keyid is not None:  # the verifier checked the signature: the payload may be read
        try:
            statement = read_unverified(load_envelope(data))
        except (EnvelopeError, ValueError, UnicodeDecodeError):
            statement = None
        if not isinstance(statement, dict) or not isinstance(statement.get("predicate"), dict) \
                or not isinstance(statement["predicate"].get("claim"), dict):
            statement = None  # not a Statement we can show
    return Facts(sha256=hashlib.sha256(data).hexdigest(), size=len(data), accepted=result.accepted,
                 reason=result.reason, detail=result.detail, keyid=result.keyid,
                 envelope_keyids=envelope_keyids(data), replayed_bound=result.replayed_bound,
                 replayed_lower=result.replayed_lower, replayed_rows=dict(result.derived or {}),
                 replayed_value=result.replayed_value,
                 replayed_value_lower=result.replayed_value_lower,
                 statement=statement)
