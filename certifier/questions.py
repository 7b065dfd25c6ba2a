"""The questions a face asks the certifier, each held to the stated domain first: a run and a target in, an exact
sigma, a numerical value or a certificate out (certifier.door names them for the faces).

exact_sigma and certify hold every question to the stated domain first (OutsideDomainError, one line naming the
nearest target that works); a search that fails is explained by one evaluation at the pair's sigma 0.1.
"""
from __future__ import annotations

from flint import fmpq

from certifier.certificate.envelope import key_id, sign_certificate
from certifier.certify import certify_run
from certifier.claim import RANDOM_ALLOCATION
from certifier.domain import below_floor, check, explain
from certifier.errors import NumericsUnreliableError
from certifier.numerics import schemes
from certifier.numerics.stages import exact_tv_product
from certifier.outcome import Outcome
from certifier.params import parse_sigma
from certifier.plan_cost import Plan
from certifier.plan_cost import plan as plan_of
from certifier.run import Run
from certifier.run import exact_sigma as run_exact_sigma
from certifier.shape import refuse_staged_options
from certifier.targets import Target

__all__ = ["admit", "certify", "check_domain", "exact_sigma", "exact_tv", "plan", "sign", "value_at"]


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
