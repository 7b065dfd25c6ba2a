"""The certifier's public surface for the faces (CLI, API, service, atlas, PLD export): a run and a target in,
an exact sigma, a numerical value or a certificate out.

  Run, Target, parse, from_json, make, KINDS    what is asked (certifier.run, certifier.targets)
  given_form(stages, beside, mixed)             which form a run was given in: a stage list or a block
  check_domain(run, target, certify)            the stated domain (certifier.domain), instant
  exact_sigma(run, target)                      the least sigma on the res(sigma) grid (numerical)
  exact_tv(run), value_at(run, target), privacy(run, ...)      numerical values at the run's sigma
  certify(run, target, sigma, ...)              the certify Outcome of a block or a run in stages
  admit(run, target, **options)                 a face's one-line refusal of options the run cannot take
  plan(run, target, sigma)                      the Plan certify runs first (certifier.plan_cost), no bound computed
  sign(predicate, key, subject)                 the one signing path (certifier.certificate.envelope)
  keygen, load_private, load_envelope, read_unverified, file_subject    keys and envelopes

exact_sigma and certify hold every question to the stated domain first (OutsideDomainError, one line naming the
nearest target that works); a search that fails is explained by one evaluation at the pair's sigma 0.1.

Below them, re-exported by name for the faces' tables, plots and service plumbing (the door is the only
certifier module a face imports, beside certifier.errors and certifier.params): the schemes and their
numerics, the closed forms, the stages, the privacy profiles and trade-off curves, the resolution, the
envelope and key helpers, and the transparency log.
"""
from __future__ import annotations

from flint import fmpq

from certifier import __version__
from certifier.audit import DEFAULT_LIMIT as AUDIT_LIMIT
from certifier.audit import DEFAULT_WIDTH as AUDIT_WIDTH
from certifier.audit import Stated, audit
from certifier.bounds.dominating import DominatingPmf, dominating_pmfs
from certifier.bounds.privacy import rounded_law
from certifier.bounds.stages_v2 import rounding_bound_v2_product, t2_of
from certifier.certificate.audit import build as build_audit
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
from certifier.certify import certify_run
from certifier.claim import FIXED_BINS, RANDOM_ALLOCATION, SCHEMES, Claim
from certifier.domain import OutsideDomainError, below_floor, check, explain
from certifier.errors import NumericsUnreliableError
from certifier.methods.v2.plan import choose_v2, eps_gaussian
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
from certifier.numerics.stages import Stage, closed_form_sigma_product, exact_tv_product, parse_stage_list
from certifier.numerics.stages_profile import exact_privacy_product, product_route_at
from certifier.numerics.targets import exact_privacy_scheme
from certifier.numerics.tradeoff import hockey_stick, optimal_tpr, pair_density
from certifier.outcome import Outcome
from certifier.params import parse_sigma
from certifier.plan_cost import Plan, predicted_seconds, predicted_seconds_product, tv_plan
from certifier.plan_cost import plan as plan_of
from certifier.resolution import resolution_label, resolution_str, round_up
from certifier.run import Run, given_form, privacy
from certifier.run import exact_sigma as run_exact_sigma
from certifier.shape import refuse_staged_options
from certifier.targets import DP, KINDS, NAMES, ONE_KIND, TPR, TV, Target, curve_of, from_json, make, parse
from certifier.targets.request import KIND_FIELDS, MAX_EPSILON
from certifier.transparency.archive import append, consistency, entries, heads, prove
from certifier.transparency.archive import audit as log_audit
from certifier.transparency.head import consistency_bundle, proof_bundle, read_head, sign_head
from certifier.transparency.merkle import Tree, leaf_hash

__all__ = ["DP", "KINDS", "KIND_FIELDS", "MAX_EPSILON", "NAMES", "ONE_KIND", "RANDOM_ALLOCATION", "TPR", "TV",
           "Outcome", "OutsideDomainError", "Plan", "Run", "Target", "admit", "certify", "check_domain", "exact_sigma",
           "exact_tv", "file_subject", "curve_of", "from_json", "given_form",
           "keygen", "load_envelope", "load_private", "make", "parse", "plan", "privacy", "read_unverified", "sign",
           "value_at",
           # re-exported by name (see the module's docstring)
           "__version__", "DominatingPmf", "dominating_pmfs", "rounded_law", "canonical_json", "claim_subject",
           "key_id", "sign_statement", "statement", "load_public", "FIXED_BINS", "SCHEMES", "Claim", "U", "c_E",
           "chi2_tpr_bound", "log1p_b_over_m", "closed_form_tv_bound", "ExactTV", "exact_tv_scheme", "monte_carlo_tv",
           "quick_chi2_tpr_bound", "delta_qp_bound", "rdp_tpr_bound", "DEFAULT_SCHEME", "chi2", "closed_form_sigma",
           "closed_form_sigma_up", "gdp_limit_sigma", "parse_scheme", "reduce", "resolve_epochs", "tv_bound",
           "Stage", "closed_form_sigma_product", "exact_tv_product", "parse_stage_list", "exact_privacy_product",
           "product_route_at", "exact_privacy_scheme", "hockey_stick", "optimal_tpr", "pair_density",
           "resolution_label", "resolution_str", "round_up", "append", "consistency", "entries", "heads",
           "prove", "log_audit", "consistency_bundle", "proof_bundle", "read_head", "sign_head", "Tree", "leaf_hash",
           "predicted_seconds", "predicted_seconds_product", "tv_plan", "AUDIT_LIMIT", "AUDIT_WIDTH", "Stated", "audit",
           "build_audit", "rounding_bound_v2_product", "t2_of", "choose_v2", "eps_gaussian", "schemes"]


def check_domain(run: Run, target: Target, certify: bool = False) -> None:
    """The stated domain of the question (certifier.domain.check): the run's blocks and the target's parameters
    (certify: also a TV target's lambda); OutsideDomainError naming the nearest target that works. Instant."""
    check(run, target, certify)


def exact_sigma(run: Run, target: Target, resolution: str = "auto") -> str:
    """The least sigma on the grid meeting the target for the run (certifier.run.exact_sigma), inside the stated
    domain: refused outside it before the search, and where the exact sigma lies below the pair's sigma 0.1 (a
    search that fails is explained by one evaluation there). A TV target's exact sigma is the numerics' alone."""
    check(run, target)
    if not target.EXACT_SIGMA_DOMAIN:
        return run_exact_sigma(run, target, resolution)
    try:
        found = run_exact_sigma(run, target, resolution)
    except NumericsUnreliableError as err:
        explain(run, target, err)
        raise
    below_floor(run, target, parse_sigma(found), False)
    return found


def exact_tv(run: Run, check: bool = True):
    """d_TV of the run's pair at its sigma(s) (Theorem 4.1; a run in stages: the product; numerical ExactTV)."""
    return run.pick(lambda m, e, scheme: schemes.exact_tv(m, e, run.sigma_float(), scheme, check=check),
                    lambda stages: exact_tv_product(stages, check=check))


def value_at(run: Run, target: Target, check: bool = True):
    """The target's quantity for the run at its sigma (numerical Value: value, error)."""
    return target.value_at(run, check)


def certify(run: Run, target: Target, sigma: fmpq | None = None, *, two_sided: bool = False, progress=None,
            **options) -> Outcome:
    """Certify the target for the run at sigma (the exact sigma when None): certifier.certify.certify_run, a
    block or a run in stages (a sigma per stage: sigma None, one-sided). options: certify's grid
    and method options (h, eta, cap, prec, method, max_tries)."""
    options = {k: v for k, v in options.items() if v is not None}   # None: certify's own default
    check(run, target, certify=True)
    if sigma is not None:
        below_floor(run, target, sigma, True)
    kw = {"two_sided": two_sided, "progress": progress, "kind_name": target.name, "kind_params": target.kind_params}
    try:
        return certify_run(run, target.value, sigma, **kw, **options)
    except NumericsUnreliableError as err:       # the exact sigma's search: below the numerics' floor, or a gap
        explain(run, target, err)
        raise


def admit(run: Run, target: Target, **options) -> None:
    """ParameterError in one line for options the run cannot take: a run in stages is certified for random
    allocation, method v2 and automatic grids only (options: h, eta, cap, prec as the face gave them)."""
    grid = tuple(options.get(k) for k in ("h", "eta", "cap", "prec"))
    run.pick(lambda m, e, scheme: None,
             lambda stages: refuse_staged_options(None, None, RANDOM_ALLOCATION, "auto", target.name, None, grid))


def sign(predicate: dict, key, subject: dict | None = None) -> tuple[bytes, str]:
    """(the signed DSSE envelope, the key id) of a predicate (the one place a certificate is signed)."""
    return sign_certificate(predicate, key, subject), key_id(key.public_key())



def plan(run: Run, target: Target, sigma: str | None = None) -> Plan:
    """The Plan certify runs first for the run and target at sigma (exact decimal text; None: the exact sigma),
    each side's planned seconds and method (certifier.plan_cost; the planners only, no bound computed)."""
    return plan_of(run, target, sigma, exact_sigma)
