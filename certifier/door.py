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

The questions themselves live in certifier.questions. Below them, re-exported by name for the faces' tables, plots
and service plumbing (the door is the only certifier module a face imports, beside certifier.errors and
certifier.params): the schemes and their numerics, the closed forms, the stages, the privacy profiles and trade-off
curves, the resolution, the envelope and key helpers, and the transparency log.

Every name is looked up in its home module on first use (PEP 562), so a command that reads a key or a certificate
never loads the numerics: `from certifier.door import keygen` imports certifier.certificate.keys alone.
"""
from __future__ import annotations

import importlib

from certifier import __version__

# home module -> the names the door gives from it ("alias=name" where the door renames)
HOMES = {
    "certifier.questions": "admit certify check_domain exact_sigma exact_tv plan sign value_at",
    "certifier.audit": "AUDIT_LIMIT=DEFAULT_LIMIT AUDIT_WIDTH=DEFAULT_WIDTH Stated audit",
    "certifier.bounds.dominating": "DominatingPmf dominating_pmfs",
    "certifier.bounds.privacy": "rounded_law",
    "certifier.bounds.stages_v2": "rounding_bound_v2_product t2_of",
    "certifier.certificate.audit": "build_audit=build",
    "certifier.certificate.envelope": "canonical_json claim_subject file_subject key_id load_envelope read_unverified "
                                      "sign_statement statement",
    "certifier.certificate.keys": "keygen load_private load_public",
    "certifier.claim": "FIXED_BINS RANDOM_ALLOCATION SCHEMES Claim",
    "certifier.domain": "OutsideDomainError",
    "certifier.methods.v2.plan": "choose_v2 eps_gaussian",
    "certifier.numerics": "schemes",
    "certifier.numerics.closed_form": "U c_E chi2_tpr_bound log1p_b_over_m closed_form_tv_bound=tv_bound",
    "certifier.numerics.exact": "ExactTV",
    "certifier.numerics.montecarlo": "monte_carlo_tv",
    "certifier.numerics.quick_bounds": "quick_chi2_tpr_bound=chi2_tpr_bound delta_qp_bound rdp_tpr_bound",
    "certifier.numerics.schemes": "DEFAULT_SCHEME chi2 closed_form_sigma closed_form_sigma_up gdp_limit_sigma "
                                  "parse_scheme reduce resolve_epochs tv_bound exact_tv_scheme=exact_tv",
    "certifier.numerics.stages": "Stage closed_form_sigma_product exact_tv_product parse_stage_list",
    "certifier.numerics.stages_profile": "exact_privacy_product product_route_at",
    "certifier.numerics.targets": "exact_privacy_scheme",
    "certifier.numerics.tradeoff": "hockey_stick optimal_tpr pair_density",
    "certifier.outcome": "Outcome",
    "certifier.plan_cost": "Plan predicted_seconds predicted_seconds_product tv_plan",
    "certifier.resolution": "resolution_label resolution_str round_up",
    "certifier.run": "Run given_form privacy",
    "certifier.targets": "DP KINDS NAMES ONE_KIND TPR TV Target curve_of from_json make parse",
    "certifier.targets.request": "KIND_FIELDS MAX_EPSILON",
    "certifier.transparency.archive": "append consistency entries heads prove log_audit=audit",
    "certifier.transparency.head": "consistency_bundle proof_bundle read_head sign_head",
    "certifier.transparency.merkle": "Tree leaf_hash",
}


def _where() -> dict[str, tuple[str, str]]:
    """The door's name -> (its home module, its name there)."""
    out = {}
    for home, names in HOMES.items():
        for entry in names.split():
            alias, _, there = entry.partition("=")
            out[alias] = (home, there or alias)
    return out


_WHERE = _where()

__all__ = ["__version__", *_WHERE]


def __getattr__(name: str):
    """The door's name from its home module, kept here after the first look-up (a submodule: the module itself)."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    home, there = _WHERE[name]
    module = importlib.import_module(home)
    value = getattr(module, there) if hasattr(module, there) else importlib.import_module(f"{home}.{there}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
