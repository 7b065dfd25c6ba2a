"""Target kinds on the face: tv (TV <= lambda), dp ((eps, delta) both ways), tpr (TPR <= beta at FPR alpha).

One parser (`parse_kind`, certifier.kind_params with the face's ranges) for the API and the command
line: exactly one kind per call, every parameter parsed from its exact decimal text (certifier.params).
`sigma_for` returns the exact sigma and the proven quick bounds beside it; `privacy_at` evaluates the pair at a sigma
(docs/targets.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from flint import fmpq

from certifier import kind_params
from certifier.errors import NumericsUnreliableError, ParameterError
from certifier.numerics import quick_bounds as qb
from certifier.numerics import schemes
from certifier.numerics import targets as nt
from certifier.params import as_decimal_text, decimal_str, parse_decimal, parse_target

KINDS = ("tv", "dp", "tpr")
ONE_KIND = kind_params.ONE_KIND


@dataclass(frozen=True)
class Kind:
    """A parsed target: kind and its parameters as exact decimal strings (and floats for numerics)."""
    kind: str
    params: dict  # name -> exact decimal text

    def f(self, name: str) -> float:
        return float(parse_decimal(name, self.params[name]))

    def describe(self) -> str:
        if self.kind == "tv":
            return f"TV <= {self.params['target']}"
        if self.kind == "dp":
            return f"({self.params['epsilon']}, {self.params['delta']})-DP, both directions"
        return f"TPR <= {self.params['tpr']} at FPR {self.params['fpr']}"


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


def _face_rule(name: str, value) -> str:
    """One parameter's exact decimal text and the face's range: lambda as `parse_target`, epsilon in
    [0, 100], delta, fpr and tpr strictly between 0 and 1."""
    if name == "target":
        return decimal_str(parse_target(as_decimal_text("target", value)))
    return parse_epsilon(value) if name == "epsilon" else _unit(name, value)


def parse_kind(target=None, *, epsilon=None, delta=None, fpr=None, tpr=None) -> Kind:
    """The one target kind the arguments name, or ParameterError (one line): certifier.kind_params with
    the face's ranges."""
    name, params = kind_params.parse_kind({"target": target, "epsilon": epsilon, "delta": delta, "fpr": fpr,
                                           "tpr": tpr}, _face_rule)
    return Kind(name, params)


def certifier_target(kind: Kind) -> tuple[fmpq, str, dict | None]:
    """(target, kind_name, kind_params) for certifier.certify.certify: the target is lambda (tv),
    delta (dp) or the TPR bound beta (tpr); the kind's other parameter stays exact decimal text."""
    if kind.kind == "tv":
        return fmpq_target(kind), "tv", None
    if kind.kind == "dp":
        return parse_decimal("delta", kind.params["delta"]), "dp", {"epsilon": kind.params["epsilon"]}
    return parse_decimal("tpr", kind.params["tpr"]), "tpr", {"fpr": kind.params["fpr"]}


def exact_sigma(steps: int, epochs: int, kind: Kind, scheme: str, resolution: str = "auto") -> str:
    """The least sigma on the grid meeting the target (numerical), as a decimal; resolution "auto" is
    res(sigma) of certifier.resolution (1e-6 below 10, six significant digits above), what certify issues."""
    if resolution == "auto":
        from certifier.resolution import issued
        return issued(exact_sigma(steps, epochs, kind, scheme, "1e-6"))
    if kind.kind == "tv":
        return schemes.exact_sigma(steps, epochs, fmpq_target(kind), scheme, resolution=resolution)
    if kind.kind == "dp":
        return nt.exact_sigma_dp(steps, epochs, kind.f("epsilon"), kind.f("delta"), resolution, scheme)
    return nt.exact_sigma_tpr(steps, epochs, kind.f("fpr"), kind.f("tpr"), resolution, scheme)


def fmpq_target(kind: Kind) -> fmpq:
    return parse_decimal("target", kind.params["target"])


def _attempt(out: dict, omitted: dict, name: str, fn) -> None:
    """One quick bound: its sigma into `out`, or, when its own search fails, its reason into `omitted`
    (the exact sigma never depends on a quick bound)."""
    try:
        out[name] = fn()
    except (ParameterError, NumericsUnreliableError, ValueError, OverflowError) as ex:
        omitted[name] = str(ex).splitlines()[0]


def quick_bounds(steps: int, epochs: int, kind: Kind, scheme: str, exact: str) -> tuple[dict, dict]:
    """The proven quick bounds for a dp or tpr target: (name -> sigma (decimal text), name -> why left out)."""
    r = schemes.reduce(scheme, steps, epochs)
    seed = float(exact)
    out: dict = {}
    omitted: dict = {}
    if kind.kind == "dp":
        _attempt(out, omitted, "rdp_qp", lambda: qb.rdp_sigma(r.steps, r.epochs, kind.f("epsilon"), kind.f("delta"),
                                                               seed=seed, scale2=r.scale2))
        return out, omitted
    _attempt(out, omitted, "rdp", lambda: qb.rdp_tpr_sigma(r.steps, r.epochs, kind.f("fpr"), kind.f("tpr"),
                                                          seed=seed, scale2=r.scale2))
    if kind.f("fpr") <= 0.5:
        _attempt(out, omitted, "closed_form", lambda: qb.tpr_bound_sigma(r.steps, r.epochs, kind.f("fpr"),
                                                                        kind.f("tpr"), scale2=r.scale2))
    return out, omitted


def value_at(steps: int, epochs: int, sigma: float, kind: Kind, scheme: str, check: bool = True) -> nt.Value:
    """The kind's quantity at sigma: the primary route and, with check=True, the second one (its error grows
    by any disagreement). check=False right after the exact-sigma search reads the search's own line (the
    primary route at the answer is cached), as `sigmacert sigma` does for TV (exact_tv(check=False))."""
    if kind.kind == "dp":
        p = nt.exact_privacy_scheme(steps, epochs, sigma, scheme, epsilons=[kind.f("epsilon")], check=check)
        return p.delta[kind.f("epsilon")]
    if kind.kind == "tpr":
        p = nt.exact_privacy_scheme(steps, epochs, sigma, scheme, fprs=[kind.f("fpr")], check=check)
        return p.tpr[kind.f("fpr")]
    p = nt.exact_privacy_scheme(steps, epochs, sigma, scheme, check=check)
    return p.tv


def privacy_at(steps: int, epochs: int, sigma: float, scheme: str, *, deltas=(), epsilons=(), fprs=()):
    """certifier.numerics.targets.exact_privacy of the scheme's pair (each parameter an exact decimal)."""
    return nt.exact_privacy_scheme(steps, epochs, sigma, scheme,
                                   deltas=[float(parse_decimal("delta", _unit("delta", d))) for d in deltas],
                                   epsilons=[float(parse_decimal("epsilon", parse_epsilon(e))) for e in epsilons],
                                   fprs=[float(parse_decimal("fpr", _unit("fpr", a))) for a in fprs])


def rdp_delta_qp(steps: int, epochs: int, sigma: float, eps: float, scheme: str) -> float:
    """(R2) at sigma for the scheme's pair (a proven bound on delta_{Q||P}(eps))."""
    r = schemes.reduce(scheme, steps, epochs)
    return qb.delta_qp_bound(r.steps, r.epochs, sigma / math.sqrt(r.scale2), eps)[0]


def tpr_bounds(steps: int, epochs: int, sigma: float, alpha: float, scheme: str) -> dict:
    """Proposition B.2 and (R3) at sigma for the scheme's pair."""
    r = schemes.reduce(scheme, steps, epochs)
    s = sigma / math.sqrt(r.scale2)
    out = {"rdp": qb.rdp_tpr_bound(r.steps, r.epochs, s, alpha)}
    if alpha <= 0.5:
        out["chi2"] = qb.chi2_tpr_bound(r.steps, r.epochs, s, alpha)
    return out


def claim_kind(claim: dict) -> dict:
    """The target kind a certificate's claim states: {"name": "tv"} (v1-v3 claims have no kind),
    {"name": "dp", "epsilon": text} or {"name": "tpr", "fpr": text} (format v4). The one reader of it."""
    kind = claim.get("kind", {"name": "tv"})
    if not isinstance(kind, dict) or kind.get("name") not in KINDS:
        raise ParameterError(f"the claim's target kind is not one of {', '.join(KINDS)}")
    return kind


def claim_statement(kind: dict, target: str) -> str:
    """The certified inequality of a claim of this kind, in words (claim.target: lambda, delta or beta)."""
    if kind["name"] == "dp":
        return (f"max(delta_Q||P, delta_P||Q)({kind['epsilon']}) <= {target}: ({kind['epsilon']}, {target})-DP, "
                "both directions")
    if kind["name"] == "tpr":
        return f"every membership test with FPR <= {kind['fpr']} has TPR <= {target}"
    return f"TV(P_M^E, Q_M^E) <= {target}"


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


def bound_reached(outcome, kind: Kind) -> str | None:
    """The bound a certify Outcome reached on the kind's functional: its `bound` when certified or for tv;
    for a dp / tpr target that was not met, the last try's kind bound (the Outcome's `bound` is then the
    grid's TV), None when no try computed one."""
    if outcome.success or kind.kind == "tv":
        return outcome.bound
    key = f"{kind.kind}_bound"
    return next((t[key] for t in reversed(outcome.tries) if t.get(key) is not None), None)


# ---------------------------------------------------------------- runs in stages (random allocation only)

def exact_sigma_stages(stages, kind: Kind, resolution: str = "auto") -> str:
    """The least sigma shared by the stages meeting a dp or tpr target (numerical), as a decimal; "auto" as
    exact_sigma (the TV kind's stages search is certifier.numerics.stages.exact_sigma_stages)."""
    from certifier.numerics import stages_profile as sp
    if resolution == "auto":
        from certifier.resolution import issued
        return issued(exact_sigma_stages(stages, kind, "1e-6"))
    if kind.kind == "dp":
        return sp.exact_sigma_dp_stages(stages, kind.f("epsilon"), kind.f("delta"), resolution)
    if kind.kind == "tpr":
        return sp.exact_sigma_tpr_stages(stages, kind.f("fpr"), kind.f("tpr"), resolution)
    raise ParameterError("the TV kind of a run in stages is certifier.numerics.stages.exact_sigma_stages")


def value_at_stages(stages, kind: Kind) -> nt.Value:
    """The kind's quantity for the stages (each with its sigma), primary and second route."""
    from certifier.numerics.stages_profile import exact_privacy_stages
    if kind.kind == "dp":
        return exact_privacy_stages(stages, epsilons=[kind.f("epsilon")]).delta[kind.f("epsilon")]
    if kind.kind == "tpr":
        return exact_privacy_stages(stages, fprs=[kind.f("fpr")]).tpr[kind.f("fpr")]
    return exact_privacy_stages(stages).tv


def privacy_at_stages(stages, *, deltas=(), epsilons=(), fprs=()):
    """certifier.numerics.stages_profile.exact_privacy_stages, each parameter parsed from its exact decimal."""
    from certifier.numerics.stages_profile import exact_privacy_stages
    return exact_privacy_stages(stages,
                                deltas=[float(parse_decimal("delta", _unit("delta", d))) for d in deltas],
                                epsilons=[float(parse_decimal("epsilon", parse_epsilon(e))) for e in epsilons],
                                fprs=[float(parse_decimal("fpr", _unit("fpr", a))) for a in fprs])


def quick_bounds_stages(stages, kind: Kind, exact: str) -> tuple[dict, dict]:
    """The proven quick bounds (R2) / (R3) for a run in stages with one sigma: (name -> sigma, name -> why
    left out)."""
    runs = [(s.steps, s.epochs) for s in stages]
    out: dict = {}
    omitted: dict = {}
    if kind.kind == "dp":
        _attempt(out, omitted, "rdp_qp", lambda: qb.rdp_sigma_stages(runs, kind.f("epsilon"), kind.f("delta"),
                                                                      seed=float(exact)))
    else:
        _attempt(out, omitted, "rdp", lambda: qb.rdp_tpr_sigma_stages(runs, kind.f("fpr"), kind.f("tpr"),
                                                                     seed=float(exact)))
    return out, omitted
