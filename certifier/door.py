"""The certifier's public surface for the faces (CLI, API, service, atlas, PLD export): a run and a target in,
an exact sigma, a numerical value or a certificate out.

  Run, Target, parse, from_json, make, KINDS    what is asked (certifier.run, certifier.targets)
  exact_sigma(run, target)                      the least sigma on the res(sigma) grid (numerical)
  exact_tv(run), value_at(run, target), privacy(run, ...)      numerical values at the run's sigma
  certify(run, target, sigma, ...)              the certify Outcome of a block or a run in stages
  admit(run, target, **options)                 a face's one-line refusal of options the run cannot take
  sign(predicate, key, subject)                 the one signing path (certifier.certificate.envelope)
  keygen, load_private, load_envelope, read_unverified, file_subject    keys and envelopes

Below them, re-exported by name for the faces' tables, plots and service plumbing (the door is the only
certifier module a face imports, beside certifier.errors and certifier.params): the schemes and their
numerics, the closed forms, the stages, the privacy profiles and trade-off curves, the resolution, the
envelope and key helpers, and the transparency log.
"""
from __future__ import annotations

from flint import fmpq

from certifier import __version__
from certifier.bounds.dominating import DominatingPmf, dominating_pmfs
from certifier.bounds.privacy import rounded_law
from certifier.certificate.envelope import (
    canonical_json,
    claim_subject,
    file_subject,
    key_id,
    load_envelope,
    read_unverified,
    sign_certificate,
    sign_statement,
    statement,
)
from certifier.certificate.keys import keygen, load_private, load_public
from certifier.certify import certify as certify_block
from certifier.claim import FIXED_BINS, RANDOM_ALLOCATION, SCHEMES, Claim
from certifier.numerics import schemes
from certifier.numerics.closed_form import U, c_E, chi2_tpr_bound, log1p_b_over_m
from certifier.numerics.closed_form import tv_bound as closed_form_tv_bound
from certifier.numerics.exact import ExactTV
from certifier.numerics.montecarlo import monte_carlo_tv
from certifier.numerics.quick_bounds import chi2_tpr_bound as quick_chi2_tpr_bound
from certifier.numerics.quick_bounds import delta_qp_bound, rdp_tpr_bound
from certifier.numerics.schemes import (
    DEFAULT_SCHEME,
    chi2,
    closed_form_sigma,
    closed_form_sigma_up,
    gdp_limit_sigma,
    parse_scheme,
    reduce,
    resolve_epochs,
    tv_bound,
)
from certifier.numerics.schemes import exact_tv as exact_tv_scheme
from certifier.numerics.stages import Stage, closed_form_sigma_stages, exact_tv_stages, parse_stages
from certifier.numerics.stages_profile import exact_privacy_stages, stages_route_at
from certifier.numerics.targets import exact_privacy_scheme
from certifier.numerics.tradeoff import hockey_stick, optimal_tpr, pair_density
from certifier.outcome import Outcome
from certifier.resolution import resolution_label, resolution_str, round_up
from certifier.run import Run, exact_sigma, privacy
from certifier.stages_certify import certify_stages, refuse_with_stages
from certifier.targets import DP, KINDS, NAMES, ONE_KIND, TPR, TV, Target, from_json, make, parse
from certifier.targets.request import KIND_FIELDS, MAX_EPSILON
from certifier.transparency.archive import append, consistency, entries, heads, prove
from certifier.transparency.archive import audit as log_audit
from certifier.transparency.head import consistency_bundle, proof_bundle, read_head, sign_head
from certifier.transparency.merkle import Tree, leaf_hash

__all__ = ["DP", "KINDS", "KIND_FIELDS", "MAX_EPSILON", "NAMES", "ONE_KIND", "RANDOM_ALLOCATION", "TPR", "TV",
           "Outcome", "Run", "Target", "admit", "certify", "exact_sigma", "exact_tv",
           "file_subject", "from_json",
           "keygen", "load_envelope", "load_private", "make", "parse", "privacy", "read_unverified", "sign",
           "value_at",
           # re-exported by name (see the module's docstring)
           "__version__", "DominatingPmf", "dominating_pmfs", "rounded_law", "canonical_json", "claim_subject",
           "key_id", "sign_statement", "statement", "load_public", "FIXED_BINS", "SCHEMES", "Claim", "U", "c_E",
           "chi2_tpr_bound", "log1p_b_over_m", "closed_form_tv_bound", "ExactTV", "exact_tv_scheme", "monte_carlo_tv",
           "quick_chi2_tpr_bound", "delta_qp_bound", "rdp_tpr_bound", "DEFAULT_SCHEME", "chi2", "closed_form_sigma",
           "closed_form_sigma_up", "gdp_limit_sigma", "parse_scheme", "reduce", "resolve_epochs", "tv_bound",
           "Stage", "closed_form_sigma_stages", "exact_tv_stages", "parse_stages", "exact_privacy_stages",
           "stages_route_at", "exact_privacy_scheme", "hockey_stick", "optimal_tpr", "pair_density",
           "resolution_label", "resolution_str", "round_up", "append", "consistency", "entries", "heads",
           "prove", "log_audit", "consistency_bundle", "proof_bundle", "read_head", "sign_head", "Tree", "leaf_hash"]


def exact_tv(run: Run, check: bool = True):
    """d_TV of the run's pair at its sigma(s) (Theorem 4.1; a run in stages: the product; numerical ExactTV)."""
    return run.pick(lambda m, e, scheme: schemes.exact_tv(m, e, run.sigma_float(), scheme, check=check),
                    lambda stages: exact_tv_stages(stages, check=check))


def value_at(run: Run, target: Target, check: bool = True):
    """The target's quantity for the run at its sigma (numerical Value: value, error)."""
    return target.value_at(run, check)


def certify(run: Run, target: Target, sigma: fmpq | None = None, *, two_sided: bool = False, progress=None,
            **options) -> Outcome:
    """Certify the target for the run at sigma (the exact sigma when None): a block by certifier.certify, a run
    in stages by certifier.stages_certify (a sigma per stage: sigma None, one-sided). options: certify's grid
    and method options (h, eta, cap, prec, method, max_tries)."""
    options = {k: v for k, v in options.items() if v is not None}   # None: certify's own default
    kw = {"two_sided": two_sided, "progress": progress, "kind_name": target.name, "kind_params": target.kind_params}
    return run.pick(lambda m, e, scheme: certify_block(m, e, target.value, sigma, scheme=scheme,
                                                       iterations=run.iterations, **kw, **options),
                    lambda stages: certify_stages(stages, target.value, sigma, **kw, **options))


def admit(run: Run, target: Target, **options) -> None:
    """ParameterError in one line for options the run cannot take: a run in stages is certified for random
    allocation, method v2 and automatic grids only (options: h, eta, cap, prec as the face gave them)."""
    grid = tuple(options.get(k) for k in ("h", "eta", "cap", "prec"))
    run.pick(lambda m, e, scheme: None,
             lambda stages: refuse_with_stages(None, None, RANDOM_ALLOCATION, "auto", target.name, None, grid))


def sign(predicate: dict, key, subject: dict | None = None) -> tuple[bytes, str]:
    """(the signed DSSE envelope, the key id) of a predicate (the one place a certificate is signed)."""
    return sign_certificate(predicate, key, subject), key_id(key.public_key())

