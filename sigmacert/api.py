"""The Python API: noise multipliers, the exact TV, certificates and their verification.

Every numeric argument goes through one coercion (certifier.params.as_decimal_text):
int, str, Decimal, Fraction and float are accepted, and a decimal string stays exact
(it is never read through a binary float). Results are `decimal.Decimal` or small
frozen dataclasses; failures raise `sigmacert.errors.SigmacertError` subclasses.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Callable, Mapping

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import verifier
from certifier import door
from certifier.door import ExactTV, Run, Stage, Target, file_subject, load_private
from certifier.errors import CannotCertifyError, CertificateRefusedError, KeyFileError, ParameterError
from certifier.params import as_decimal_text, parse_count, parse_epochs, parse_sigma, parse_steps, parse_target
from sigmacert import kinds
from sigmacert.files import write_atomic

DEFAULT_SCHEME = door.DEFAULT_SCHEME  # "random-allocation" (Algorithm 1); or "fixed-bins"
SCHEMES = door.SCHEMES


def _run(steps, epochs, scheme, iterations=None) -> tuple[int, int, str, int | None]:
    """(M, E, scheme, iterations): a fixed-bins run may give its iterations instead of E = ceil(T/M)."""
    scheme = door.parse_scheme(scheme)
    m = parse_steps(as_decimal_text("steps", steps))
    e = None if epochs is None else parse_epochs(as_decimal_text("epochs", epochs))
    t = None if iterations is None else parse_count("iterations", as_decimal_text("iterations", iterations), 10**12)
    return m, parse_epochs(door.resolve_epochs(m, e, scheme, t)), scheme, t


def closed_form_sigma(steps, epochs, target, *, scheme=DEFAULT_SCHEME, iterations=None) -> Decimal:
    """sigma(M, E, lambda) of Corollary 3.4 (eq. 12), rounded UP to 1e-6.

    A proven bound (Theorem 3.3): TV(P_M^E, Q_M^E) <= U(c_E) = target at this sigma, and
    rounding up only adds noise. For scheme="fixed-bins" the pair is the one-epoch pair at
    sigma/sqrt(E) (docs/integrations.md), so the closed form is sqrt(E) * sigma(M, 1, lambda).
    Raises ParameterError for M, E < 1, target outside (0, 1) or an unknown scheme.
    """
    m, e, scheme, _ = _run(steps, epochs, scheme, iterations)
    lam = parse_target(as_decimal_text("target", target))
    return door.closed_form_sigma_up(m, e, lam, scheme)


def _staged_run(spec, scheme, per_stage) -> Run:
    """The run in stages of a call (per_stage as parse_stage_list); refuses any scheme but random allocation."""
    if door.parse_scheme(scheme) != DEFAULT_SCHEME:
        raise ParameterError("stages are for random allocation (Algorithm 1) only")
    return Run.composed(spec, per_stage)


def exact_tv(steps=None, epochs=None, sigma=None, *, stages=None, scheme=DEFAULT_SCHEME, iterations=None) -> ExactTV:
    """d_TV(P_M^E, Q_M^E) at sigma (Theorem 4.1, Appendix C.4): a float with an error estimate.

    stages=[(100, 5), (400, 5)] (with sigma shared) or [(100, 5, "1.2"), (400, 5, "1.5")] or
    Stage values: the run in stages, E Lambda^q = prod_s F_{M_s, sigma_s}(q)^{E_s} (docs/compose.md).

    scheme="fixed-bins": TV(M, 1, sigma/sqrt(E)), the same distance (docs/integrations.md).
    Numerical, not certified (use `certify` for a proof). Raises ParameterError for bad
    input and NumericsUnreliableError when the value cannot be computed to its accuracy.
    """
    return door.exact_tv(_run_of(steps, epochs, stages, scheme, iterations, sigma, needs=AT_SIGMA))


def exact_sigma(steps=None, epochs=None, target=None, *, stages=None, epsilon=None, delta=None, fpr=None, tpr=None,
                resolution="auto", scheme=DEFAULT_SCHEME, iterations=None) -> Decimal:
    """The exact sigma: the least sigma on the `resolution` grid whose pair meets the target, for
    exactly one target kind (docs/targets.md):

      target=lambda          TV <= lambda (Appendix C.4: sigma_lambda rounded up to the grid);
      epsilon=, delta=       (eps, delta)-DP in both directions, max(delta_{Q||P}, delta_{P||Q})(eps) <= delta;
      fpr=, tpr=             every membership test with FPR fpr has TPR <= tpr.

    resolution "auto": 1e-6 below sigma = 10, six significant digits from 10 on (certifier.resolution,
    what `certify` issues). Numerical; `certify` proves the TV kind. For scheme="fixed-bins" the pair
    is TV(M, 1, sigma/sqrt(E)).

    >>> exact_sigma(100, 10, "0.1")
    Decimal('1.426215')

    stages=[(100, 5), (400, 5)]: the least sigma, shared by the stages, on the same grid, for any
    kind (the pair is the product of the stages' pairs; docs/compose.md, docs/targets.md).
    """
    run = _run_of(steps, epochs, stages, scheme, iterations, per_stage=False, needs=("steps", "epochs"))
    kind = kinds.parse_kind(target, epsilon=epsilon, delta=delta, fpr=fpr, tpr=tpr)
    res = resolution if resolution == "auto" else as_decimal_text("resolution", resolution)
    return Decimal(kinds.exact_sigma(run, kind, res))


AT_SIGMA = ("steps", "epochs", "sigma")   # a call that computes at sigma: a block needs all three


def _run_of(steps, epochs, stages, scheme, iterations, sigma=None, *, per_stage=None, needs=("steps",)) -> Run:
    """The run of a call (its form read by door.given_form): stages= (a run in stages, per_stage as
    parse_stage_list; a call at sigma takes sigma= shared or the stages' own) or steps with epochs / iterations (a
    block, at sigma when given). needs: the block's arguments the call must give (epochs: or iterations), refused in
    one line before any parsing."""
    def staged(spec):
        if needs != AT_SIGMA:
            return _staged_run(spec, scheme, per_stage)
        return _staged_run(spec, scheme, None).with_sigma(sigma, "sigma=", " or a sigma on every stage")

    def block():
        given = {"steps": steps, "epochs": iterations if epochs is None else epochs, "sigma": sigma}
        if any(given[k] is None for k in needs):
            raise ParameterError("give steps, epochs and sigma (or stages=)" if needs == AT_SIGMA else
                                 "give steps and epochs (or stages=)")
        m, e, named, t = _run(steps, epochs, scheme, iterations)
        return Run.block(m, e, named, t, None if sigma is None else as_decimal_text("sigma", sigma))
    return door.given_form(stages, (steps, epochs, iterations), "stages= replaces steps, epochs and iterations").pick(
        block, staged)


def exact_privacy(steps=None, epochs=None, sigma=None, *, stages=None, delta=(), epsilon=(), fpr=(),
                  scheme=DEFAULT_SCHEME, iterations=None):
    """The pair's privacy profile and trade-off curve at sigma (numerical, with error estimates):
    eps at each `delta`, delta(eps) = max of both directions at each `epsilon`, and the largest TPR
    of a test with FPR `fpr` (each a number or a list). Returns a PrivacyProfile whose dicts map
    each float parameter to a Value(value, error); `.tv` is the exact TV.

    stages=[(100, 5, "1.2"), (400, 5, "1.5")] (or [(100, 5), (400, 5)] with sigma= shared): the run in
    stages, E Lambda^q = prod_s F_{M_s, sigma_s}(q)^{E_s}; a StagesProfile with the same dicts."""
    many = lambda x: list(x) if isinstance(x, (list, tuple)) else [x]  # noqa: E731
    run = _run_of(steps, epochs, stages, scheme, iterations, sigma, needs=AT_SIGMA)
    return kinds.privacy_at(run, deltas=many(delta), epsilons=many(epsilon), fprs=many(fpr))


@dataclass(frozen=True)
class Certificate:
    """A certified (and, with a key, signed) statement TV(P_M^E, Q_M^E) <= target at sigma.

    `bound` is the upper end of the Lemma C.5 ball (Appendix C.5); for a two-sided certificate
    `sigma_low` is proven to miss the target (tv_lower > target), so sigma_low < sigma_lambda <= sigma,
    and `epsilon` (delta -> eps, both directions) and `tpr` (FPR -> TPR bound) are certified.
    `envelope` is the signed DSSE envelope (canonical JSON bytes), or None without a key.
    """
    steps: int
    epochs: int
    target: Decimal
    sigma: Decimal | None           # None: a run in stages with a sigma per stage (see stages)
    bound: Decimal
    two_sided: bool
    sigma_low: Decimal | None
    tv_lower: Decimal | None
    epsilon: Mapping[str, Decimal]
    tpr: Mapping[str, Decimal]
    predicate: Mapping = field(repr=False)
    envelope: bytes | None = field(default=None, repr=False)
    keyid: str | None = None
    scheme: str = DEFAULT_SCHEME
    iterations: int | None = None   # fixed-bins: the run's rounds; epochs = ceil(iterations / steps)
    kind: str = "tv"                # the target kind: "tv", "dp" or "tpr" (docs/targets.md)
    kind_params: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # exact decimals
    stages: tuple = ()              # a run in stages: ((M_s, E_s), ...) at one sigma (steps None, epochs the total),
    #                                 or ((M_s, E_s, sigma_s), ...) with a sigma per stage (then sigma None, one-sided)

    @property
    def bound_lower(self) -> Decimal | None:
        """The certified lower value of the kind's functional at sigma_low (TV's for a tv target)."""
        return self.tv_lower

    def write(self, path: str, *, force: bool = False) -> None:
        """Write the signed envelope to `path`, atomically. An existing file is kept and ParameterError
        raised unless force=True (the rule of `sigmacert certify -o`); also when unsigned."""
        if self.envelope is None:
            raise ParameterError("this certificate is not signed (pass key= to certify)")
        write_atomic(os.fspath(path), self.envelope + b"\n", force=force, how="write(path, force=True)")


def _private_key(key):

    if isinstance(key, Ed25519PrivateKey):
        return key
    if isinstance(key, (str, os.PathLike)):
        return load_private(os.fspath(key))
    raise KeyFileError(f"key must be a path to a PKCS#8 PEM file or an Ed25519PrivateKey, got {type(key).__name__}")


@dataclass(frozen=True)
class Issued:
    """What `issue` returns: certify's Outcome and, when certified with a key, the signed envelope."""
    outcome: object
    envelope: bytes | None
    keyid: str | None


def issue(run: Run, target: Target, sigma=None, *, key=None, subject: dict | None = None, two_sided: bool = True,
          progress=None, **options) -> Issued:
    """The one path from a face (this API, the CLI) to the mathematics: certify the target for the run
    (certifier.door.certify: a block or a run in stages; sigma an exact rational, None for the exact sigma or a
    sigma per stage; options: h, eta, cap as decimal strings, prec) and, when it is certified and a loaded
    private key is given, sign it (certifier.door.sign; subject: a subject entry, default the claim).
    Raises what certify raises, and CannotCertifyError for a certified bound that no certificate format of
    this build records."""
    res = door.certify(run, target, sigma, two_sided=two_sided, progress=progress, **options)
    if res.success and res.predicate is None:
        raise CannotCertifyError(f"the {target.name} bound {res.bound} <= {res.target} at sigma {res.sigma} is "
                                 f"certified, but no certificate format records the {target.name} kind in this "
                                 "build; no certificate issued")
    if not res.success or key is None:
        return Issued(res, None, None)
    return Issued(res, *door.sign(res.predicate, key, subject))


def _lower(res):
    """The certified lower value of the kind's functional at sigma_low (tv: the lower TV)."""
    return getattr(res, "bound_lower", None) or res.tv_lower


def certify(steps=None, epochs=None, target=None, sigma=None, *, stages=None, epsilon=None, delta=None, fpr=None,
            tpr=None, key=None, two_sided: bool = True, subject=None,
            progress: Callable[[str, float, float], None] | None = None, scheme=DEFAULT_SCHEME,
            iterations=None) -> Certificate:
    """Certify TV(P_M^E, Q_M^E) <= target at sigma by the finite computation of Appendix C.5, or, for
    exactly one other target kind (as in `exact_sigma`): epsilon=, delta= ((eps, delta)-DP in both
    directions; `bound` bounds max(delta_{Q||P}, delta_{P||Q})(eps) and `target` is delta) or fpr=, tpr=
    (every test with FPR fpr has TPR <= tpr; `bound` bounds that TPR and `target` is tpr). `kind` and
    `kind_params` name it; `tv_lower` is then the kind's lower value at sigma_low.

    Without sigma the exact sigma is found first (Theorem 4.1). two_sided (the default, as on
    the command line) also proves sigma - 1e-6 misses the target and adds certified (eps, delta)
    and TPR rows (format v2); if that side cannot be certified the certificate stays one-sided.
    key: a PKCS#8 PEM path or an Ed25519PrivateKey; with it the result carries a signed DSSE
    envelope. subject: bytes or a file path the certificate is about (default: the claim).
    progress(stage, percent, seconds) is called as the work advances.
    scheme="fixed-bins" certifies jax_privacy's balls-in-bins sampler (one bin per record for the
    whole run; iterations instead of epochs gives E = ceil(iterations/M)); the claim names it.
    stages=[(100, 5), (400, 5)] (or "100x5,400x5", or Stage values) instead of steps and epochs: a run in
    stages at one shared sigma, any target kind (certifier.certify.certify_run, format v5; docs/compose.md); or
    stages=[(100, 5, "1.2"), (400, 5, "1.5")] ("100x5@1.2,400x5@1.5", Stage(100, 5, sigma="1.2")): a sigma per
    stage, no sigma=, and the certificate is one-sided (the upper side proves the target at those sigmas;
    there is no single sigma to step down), whatever two_sided says.
    Raises ParameterError (bad input), CannotCertifyError (no certificate; the message says why).
    """
    run = _run_of(steps, epochs, stages, scheme, iterations)
    kind = kinds.parse_kind(target, epsilon=epsilon, delta=delta, fpr=fpr, tpr=tpr)
    run.refuse_shared(sigma, "sigma=")
    s = None if sigma is None else parse_sigma(as_decimal_text("sigma", sigma))
    priv = None if key is None else _private_key(key)  # fail early, before the long computation
    subj = _subject(subject)
    issued = issue(run, kind, s, key=priv, subject=subj, progress=progress,
                   two_sided=two_sided and not run.one_sided_reason)
    res, envelope, keyid = issued.outcome, issued.envelope, issued.keyid
    if not res.success:
        raise CannotCertifyError(f"not certified: the bound reached, {kinds.bound_reached(res, kind)}, exceeds the "
                                 f"target {res.target} ({kind.describe()}) at {run.where(res.sigma)}")
    eps = {d: Decimal(r["epsilon"]) for d, r in (res.privacy or {}).get("epsilon_at_delta", {}).items()}
    tpr = {a: Decimal(r["tpr"]) for a, r in (res.tpr or {}).items()}
    dec = lambda x: None if x is None else Decimal(x)  # noqa: E731
    steps = run.pick(lambda m, e, scheme: m, lambda stages: None)   # a run in stages has no one M
    return Certificate(steps, run.epochs, Decimal(res.target), dec(res.sigma), Decimal(res.bound),
                       res.two_sided, dec(res.sigma_low), dec(_lower(res)),
                       MappingProxyType(eps), MappingProxyType(tpr), MappingProxyType(res.predicate),
                       envelope, keyid, run.scheme, run.iterations, kind.name, _kind_params(kind),
                       run.stages_for_certificate())


def _kind_params(kind) -> Mapping:
    """Certificate.kind_params: the kind's exact decimal parameters (empty for tv)."""
    return MappingProxyType(kind.summary().get("kind_params", {}))


def _subject(subject):
    """The subject entry of `subject` (bytes or a file path), None for the claim itself."""
    if isinstance(subject, bytes):
        return file_subject("subject", subject)
    if subject is None:
        return None
    with open(subject, "rb") as f:
        return file_subject(os.path.basename(os.fspath(subject)), f.read())


@dataclass(frozen=True)
class Verification:
    """The independent verifier's verdict (package `verifier`, docs/verifier.md)."""
    accepted: bool
    reason: str                      # "accepted" or a stable rejection code
    detail: str
    replayed_bound: Decimal | None   # the verifier's own upper bound on TV
    replayed_lower: Decimal | None   # its own lower bound at sigma_low (two-sided)
    claim: Mapping | None
    keyid: str | None
    seconds: float

    def __bool__(self) -> bool:
        return self.accepted


def verify(certificate, public_key, *, subject=None) -> Verification:
    """Replay a certificate with the independent verifier (never raises on a bad certificate).

    certificate: a path, the envelope bytes, or a `Certificate`; public_key: a PEM path, PEM
    bytes or an Ed25519PublicKey (or a list of them). subject: a file whose SHA-256 must be a
    subject of the statement. Raises ParameterError only for unreadable files or keys.
    """
    keys = public_key if isinstance(public_key, (list, tuple)) else [public_key]
    try:
        loaded = [verifier.load_public_key(k if isinstance(k, bytes) else open(os.fspath(k), "rb").read())
                  if isinstance(k, (bytes, str, os.PathLike)) else k for k in keys]
        if isinstance(certificate, Certificate):
            if certificate.envelope is None:
                raise ParameterError("this certificate is not signed; nothing to verify")
            data = certificate.envelope
        elif isinstance(certificate, bytes):
            data = certificate
        else:
            data = verifier.read_limited(os.fspath(certificate))
        digest = None
        if subject is not None:
            with open(subject, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
    except (OSError, ValueError) as err:
        raise ParameterError(f"cannot read certificate, key or subject: {err}") from None
    r = verifier.verify_bytes(data, loaded, digest)
    dec = lambda x: None if x is None else Decimal(x)
    return Verification(r.accepted, r.reason, r.detail, dec(r.replayed_bound), dec(r.replayed_lower),
                        None if r.claim is None else MappingProxyType(r.claim), r.keyid, r.seconds)


def require_verified(certificate, public_key, *, subject=None) -> Verification:
    """The raising twin of `verify`: its Verification when accepted, else CertificateRefusedError
    with the verifier's reason (ParameterError for unreadable files or keys)."""
    v = verify(certificate, public_key, subject=subject)
    if not v.accepted:
        raise CertificateRefusedError(f"certificate rejected ({v.reason}): {v.detail}")
    return v


__all__ = ["ExactTV", "Stage", "Certificate", "Issued", "issue", "Verification", "closed_form_sigma", "exact_tv",
           "exact_sigma", "exact_privacy", "certify", "verify", "require_verified", "SCHEMES", "DEFAULT_SCHEME"]
