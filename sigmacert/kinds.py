"""Target kinds on the face: tv (TV <= lambda), dp ((eps, delta) both ways), tpr (TPR <= beta at FPR alpha).

One parser (`parse_kind`: certifier.targets.parse with the face's ranges) for the API and the command
line: exactly one kind per call, every parameter parsed from its exact decimal text (certifier.params);
it returns a certifier.targets.Target, which answers every question of its kind on a run
(certifier.run.Run): `exact_sigma`, `value_at`, `quick_bounds`; `privacy_at` evaluates a run's pair at its
sigma (docs/targets.md).
"""
from __future__ import annotations

import math

from flint import fmpq

from certifier import door
from certifier.door import Run, Target, delta_qp_bound, quick_chi2_tpr_bound, rdp_tpr_bound, reduce
from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.params import as_decimal_text, decimal_str, parse_decimal, parse_target

KINDS = door.NAMES
ONE_KIND = door.ONE_KIND
Kind = Target


def _unit(name: str, value) -> str:
    text = as_decimal_text(name, value)
    q = parse_decimal(name, text)
    if not 0 < q < 1:
        raise ParameterError(f"{name} must lie strictly between 0 and 1, got {text}")
    return text


def parse_epsilon(value) -> str:
    text = as_decimal_text("epsilon", value)
    q = parse_decimal("epsilon", text)
    if not 0 <= q <= 100:
        raise ParameterError(f"epsilon must lie in [0, 100], got {text}")
    return text


def _exact(name: str, value) -> str:
    text = as_decimal_text(name, value)
    parse_decimal(name, text)
    return text


FACE_RULES = {"target": lambda v: decimal_str(parse_target(as_decimal_text("target", v)))}


def _face_rule(name: str, value) -> str:
    """One parameter's exact decimal text: lambda as `parse_target`; epsilon, delta, fpr and tpr exactly as
    written, their ranges the stated domain's (certifier.domain, applied by door.parse)."""
    return FACE_RULES.get(name, lambda v: _exact(name, v))(value)


def parse_kind(target=None, *, epsilon=None, delta=None, fpr=None, tpr=None) -> Target:
    """The one target the arguments name, or ParameterError (one line): certifier.targets.parse, held to the
    stated domain (OutsideDomainError names the nearest target that works)."""
    return door.parse({"target": target, "epsilon": epsilon, "delta": delta, "fpr": fpr, "tpr": tpr},
                         _face_rule)


def certifier_target(kind: Target) -> tuple[fmpq, str, dict | None]:
    """(target, kind_name, kind_params) for certifier.certify.certify: the target is lambda (tv),
    delta (dp) or the TPR bound beta (tpr); the kind's other parameter stays exact decimal text."""
    return kind.value, kind.name, kind.kind_params


def exact_sigma(run: Run, kind: Target, resolution: str = "auto") -> str:
    """The least sigma on the grid meeting the target for the run (numerical), as a decimal; resolution "auto"
    is res(sigma) of certifier.resolution (1e-6 below 10, six significant digits above), what certify issues."""
    return door.exact_sigma(run, kind, resolution)


def quick_bounds(run: Run, kind: Target, exact: str) -> tuple[dict, dict]:
    """The proven quick bounds for a dp or tpr target: (name -> sigma (decimal text), name -> why left out);
    a bound whose own search fails is left out with its reason (the exact sigma never depends on one)."""
    out: dict = {}
    omitted: dict = {}
    for name, fn in kind.quick_bounds(run, exact).items():
        try:
            out[name] = fn()
        except (ParameterError, NumericsUnreliableError, ValueError, OverflowError) as ex:
            omitted[name] = str(ex).splitlines()[0]
    return out, omitted


def value_at(run: Run, kind: Target, check: bool = True):
    """The kind's quantity for the run at its sigma: the primary route and, with check=True, the second one (its
    error grows by any disagreement). check=False right after the exact-sigma search reads the search's own
    line (the primary route at the answer is cached), as `sigmacert sigma` does for TV (exact_tv(check=False))."""
    return kind.value_at(run, check)


def privacy_at(run: Run, *, deltas=(), epsilons=(), fprs=()):
    """The privacy profile of the run's pair at its sigma (certifier.run.privacy), each parameter parsed
    from its exact decimal."""
    return door.privacy(run, deltas=[float(parse_decimal("delta", _unit("delta", d))) for d in deltas],
                        epsilons=[float(parse_decimal("epsilon", parse_epsilon(e))) for e in epsilons],
                        fprs=[float(parse_decimal("fpr", _unit("fpr", a))) for a in fprs])


def rdp_delta_qp(steps: int, epochs: int, sigma: float, eps: float, scheme: str) -> float:
    """(R2) at sigma for the scheme's pair (a proven bound on delta_{Q||P}(eps))."""
    r = reduce(scheme, steps, epochs)
    return delta_qp_bound(r.steps, r.epochs, sigma / math.sqrt(r.scale2), eps)[0]


def tpr_bounds(steps: int, epochs: int, sigma: float, alpha: float, scheme: str) -> dict:
    """Proposition B.2 and (R3) at sigma for the scheme's pair."""
    r = reduce(scheme, steps, epochs)
    s = sigma / math.sqrt(r.scale2)
    out = {"rdp": rdp_tpr_bound(r.steps, r.epochs, s, alpha)}
    if alpha <= 0.5:
        out["chi2"] = quick_chi2_tpr_bound(r.steps, r.epochs, s, alpha)
    return out


def claim_kind(claim: dict) -> dict:
    """The target kind a certificate's claim states: {"name": "tv"} (v1-v3 claims have no kind),
    {"name": "dp", "epsilon": text} or {"name": "tpr", "fpr": text} (format v4). The one reader of it."""
    kind = claim.get("kind", {"name": "tv"})
    if not isinstance(kind, dict) or kind.get("name") not in KINDS:
        raise ParameterError(f"the claim's target kind is not one of {', '.join(KINDS)}")
    return kind


def claim_target(claim: dict) -> Target:
    """The Target a certificate's claim states (its kind and target)."""
    return door.from_json(claim_kind(claim), str(claim["target"]))


def claim_statement(kind: dict, target: str) -> str:
    """The certified inequality of a claim of this kind, in words (claim.target: lambda, delta or beta)."""
    return door.from_json(kind, target).statement(target)


def certified_sides(predicate: dict) -> dict:
    """The kind and both certified values of a predicate (any format): `upper` <= claim.target at sigma
    (v1-v3: `bound`; v4: `upper.bound`), and for a two-sided one `lower` > target at `sigma_low`
    (v2/v3: lower.tv_lower; v4: lower.bound_lower)."""
    upper = predicate.get("upper")
    low = predicate.get("lower")
    return {"kind": claim_kind(predicate["claim"]),
            "upper": upper["bound"] if isinstance(upper, dict) and "bound" in upper else predicate["bound"],
            "lower": None if low is None else low.get("bound_lower", low.get("tv_lower")),
            "sigma_low": None if low is None else low["sigma_low"]}


def bound_reached(outcome, kind: Target) -> str | None:
    """The bound a certify Outcome reached on the kind's functional: its `bound` when certified or for tv;
    for a dp / tpr target that was not met, the last try's kind bound (the Outcome's `bound` is then the
    grid's TV), None when no try computed one."""
    return kind.bound_reached(outcome)
