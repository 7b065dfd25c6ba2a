"""The certifier's public surface for the faces (CLI, API, service, atlas, PLD export): a run and a target in,
an exact sigma, a numerical value or a certificate out.

  Run, Target, parse, from_json, make, KINDS    what is asked (certifier.run, certifier.targets)
  exact_sigma(run, target)                      the least sigma on the res(sigma) grid (numerical)
  exact_tv(run), value_at(run, target), privacy(run, ...)      numerical values at the run's sigma
  certify(run, target, sigma, ...)              the certify Outcome of a block or a run in stages
  admit(run, target, **options)                 a face's one-line refusal of options the run cannot take
  sign(predicate, key, subject)                 the one signing path (certifier.certificate.envelope)
  keygen, load_private, load_envelope, read_unverified, file_subject    keys and envelopes
"""
from __future__ import annotations

from flint import fmpq

from certifier.certificate.envelope import file_subject, key_id, load_envelope, read_unverified, sign_certificate
from certifier.certificate.keys import keygen, load_private
from certifier.certify import certify_run, refuse_with_stages
from certifier.claim import RANDOM_ALLOCATION
from certifier.numerics import schemes
from certifier.numerics.stages import exact_tv_stages
from certifier.outcome import Outcome
from certifier.run import Run, exact_sigma, privacy
from certifier.targets import DP, KINDS, NAMES, ONE_KIND, TPR, TV, Target, from_json, make, parse
from certifier.targets.request import KIND_FIELDS, MAX_EPSILON

__all__ = ["DP", "KINDS", "KIND_FIELDS", "MAX_EPSILON", "NAMES", "ONE_KIND", "RANDOM_ALLOCATION", "TPR", "TV",
           "Outcome", "Run", "Target", "admit", "certify", "exact_sigma", "exact_tv", "file_subject", "from_json",
           "keygen", "load_envelope", "load_private", "make", "parse", "privacy", "read_unverified", "sign",
           "value_at"]


def exact_tv(run: Run, check: bool = True):
    """d_TV of the run's pair at its sigma(s) (Theorem 4.1; a run in stages: the product; numerical ExactTV)."""
    return run.pick(lambda m, e, scheme: schemes.exact_tv(m, e, run.sigma_float(), scheme, check=check),
                    lambda stages: exact_tv_stages(stages, check=check))


def value_at(run: Run, target: Target, check: bool = True):
    """The target's quantity for the run at its sigma (numerical Value: value, error)."""
    return target.value_at(run, check)


def certify(run: Run, target: Target, sigma: fmpq | None = None, *, two_sided: bool = False, progress=None,
            **options) -> Outcome:
    """Certify the target for the run at sigma (the exact sigma when None): certifier.certify.certify_run, a
    block or a run in stages (a sigma per stage: sigma None, one-sided). options: certify's grid
    and method options (h, eta, cap, prec, method, max_tries)."""
    options = {k: v for k, v in options.items() if v is not None}   # None: certify's own default
    kw = {"two_sided": two_sided, "progress": progress, "kind_name": target.name, "kind_params": target.kind_params}
    return certify_run(run, target.value, sigma, **kw, **options)


def admit(run: Run, target: Target, **options) -> None:
    """ParameterError in one line for options the run cannot take: a run in stages is certified for random
    allocation, method v2 and automatic grids only (options: h, eta, cap, prec as the face gave them)."""
    grid = tuple(options.get(k) for k in ("h", "eta", "cap", "prec"))
    run.pick(lambda m, e, scheme: None,
             lambda stages: refuse_with_stages(None, None, RANDOM_ALLOCATION, "auto", target.name, None, grid))


def sign(predicate: dict, key, subject: dict | None = None) -> tuple[bytes, str]:
    """(the signed DSSE envelope, the key id) of a predicate (the one place a certificate is signed)."""
    return sign_certificate(predicate, key, subject), key_id(key.public_key())
