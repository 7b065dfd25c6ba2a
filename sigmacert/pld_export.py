"""The certified dominating PLD of a run, as a dp_accounting PrivacyLossDistribution (docs/compose.md).

`pld(M, E, sigma)` runs the rigorous upper bound (the certificate's method and grid choice),
takes its rounded law of Lambda on the grid e^{k eta} (after Lemma C.5's roundings and recorded
deletions; the missing mass at loss +inf), rounds it to floats so every delta can only grow
(certifier.bounds.dominating) and hands both directions to dp_accounting (pessimistic). What is
certified: the exported pmfs' exact hockey sticks dominate the true pair's at every eps. What is
not: dp_accounting's own floating-point evaluation and composition.
dp_accounting is imported lazily (extra "pld").
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

from certifier import door
from certifier.door import (
    DominatingPmf,
    choose_v2,
    dominating_pmfs,
    eps_gaussian,
    exact_tv_product,
    exact_tv_scheme,
    rounded_law,
    rounding_bound_v2_product,
    t2_of,
)
from certifier.errors import CannotCertifyError, ParameterError
from certifier.params import as_decimal_text, decimal_str, parse_epochs, parse_sigma, parse_steps, parse_target

FORMAT = "sigmacert-pld/1"
DEFAULT_INTERVAL = 1e-4   # dp_accounting's default value_discretization_interval
MARGIN = 1e-3             # default TV target: (1 + MARGIN) x the exact TV, a grid fine enough for eps to 1e-4


@dataclass(frozen=True)
class DominatingRun:
    """The two exported directions of a run and what the certificate row says about the same law."""
    steps: int
    epochs: int
    sigma: str
    target: str
    bound: str                 # the certified TV bound of the same run (upper)
    method: str
    remove: DominatingPmf      # Q'||P': losses k eta (ln Lambda under Q)
    add: DominatingPmf         # P'||Q': losses -k eta (under P)
    privacy: dict | None       # the certified (eps, delta) rows from the same law
    stages: str | None = None  # a run in stages: "100x5@1.2,400x5@1.5" (steps, epochs 0; sigma "-")

    def to_json(self) -> dict:
        def side(p: DominatingPmf) -> dict:
            lo = min(p.probs) if p.probs else 0
            hi = max(p.probs) + 1 if p.probs else 0
            return {"lower_loss": lo, "probs": [p.probs.get(i, 0.0) for i in range(lo, hi)],
                    "infinity_mass": p.infinity_mass}
        return {"format": FORMAT, "stages": self.stages, "steps": self.steps, "epochs": self.epochs,
                "sigma": self.sigma,
                "target": self.target, "bound": self.bound, "method": self.method,
                "value_discretization_interval": self.remove.interval, "privacy": self.privacy,
                "remove": side(self.remove), "add": side(self.add)}


def _default_target(tv: float) -> str:
    t = Decimal(tv) * Decimal(1 + MARGIN) + Decimal("1e-6")
    t = t.quantize(Decimal("1e-9"), rounding=ROUND_CEILING)
    if t >= 1:
        raise CannotCertifyError("the TV of this run is too close to 1 for a dominating PLD")
    return str(t)


def dominating_run(steps, epochs, sigma, *, target=None, value_discretization_interval=DEFAULT_INTERVAL,
                   progress=None) -> DominatingRun:
    """The certified dominating pair of (M, E, sigma) as float pmfs that keep dominance."""
    m = parse_steps(as_decimal_text("steps", steps))
    e = parse_epochs(as_decimal_text("epochs", epochs))
    s = parse_sigma(as_decimal_text("sigma", sigma))
    if m == 1:
        raise ParameterError("M = 1 is the Gaussian mechanism: use dp_accounting's from_gaussian_mechanism")
    interval = _interval(value_discretization_interval)
    text = (as_decimal_text("target", target) if target is not None else
            _default_target(exact_tv_scheme(m, e, float(s)).tv))
    out = door.certify(door.Run.block(m, e), door.TV(decimal_str(parse_target(text))), s, progress=progress)
    if not out.success or out.law is None:
        raise CannotCertifyError(f"no certified bound at M={m}, E={e}, sigma={decimal_str(s)} for target {text}")
    remove, add = dominating_pmfs(out.law, interval)
    privacy = out.privacy if out.privacy is not None else out.law.privacy_rows()[0]
    return DominatingRun(m, e, decimal_str(s), text, out.bound, out.method, remove, add, privacy)


def dominating_product(stages, sigma=None, *, value_discretization_interval=DEFAULT_INTERVAL) -> DominatingRun:
    """The dominating pair of a run in stages, from certifier.bounds.stages_v2 (method v2, one eta grid).

    The grid is the one certify would choose for one block of the total epochs at the largest M and
    the smallest sigma, with a TV margin of MARGIN x the exact TV (a valid grid for any stages: only
    its tightness depends on the choice). Not a certificate: no claim or verifier names stages yet.
    """
    run = door.Run.composed(stages).with_sigma(sigma, "sigma", " or a sigma on every stage").stages
    interval = _interval(value_discretization_interval)
    tv = exact_tv_product(run, check=False).tv
    if tv >= 0.999:
        raise CannotCertifyError("the TV of this run is too close to 1 for a dominating PLD")
    sigmas = [parse_sigma(st.sigma) for st in run]
    top_m, low_s = max(st.steps for st in run), min(sigmas)
    total_e = min(sum(st.epochs for st in run), 10**6)
    plan = choose_v2(top_m, total_e, t2_of(low_s), max(MARGIN * tv, 1e-7), tv, need_eps=2 * eps_gaussian(tv) + 5)
    res = rounding_bound_v2_product([(st.steps, st.epochs, t2_of(s)) for st, s in zip(run, sigmas)], plan.method)
    law = rounded_law(res.b, plan.method.eta, plan.method.fixed_point_bits)
    remove, add = dominating_pmfs(law, interval)
    name = ",".join(map(str, run))
    return DominatingRun(0, 0, "-", "-", res.bound, "lemma-c5-rounding v2 (stages)", remove, add,
                         law.privacy_rows()[0], name)


def _interval(value) -> float:
    try:
        interval = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"the loss interval must be a number, got {value!r}") from None
    if not (math.isfinite(interval) and 1e-7 <= interval <= 1.0):
        raise ParameterError(f"the loss interval must lie in [1e-7, 1], got {value!r}")
    return interval


def to_dp_accounting(run: DominatingRun):
    """Both directions as one dp_accounting PrivacyLossDistribution (pessimistic, not symmetric)."""
    try:
        from dp_accounting.pld import privacy_loss_distribution as pld_mod
    except ImportError:
        raise ParameterError("dp_accounting is not installed (pip install 'sigmacert[pld]')") from None
    return pld_mod.PrivacyLossDistribution.create_from_rounded_probability(
        run.remove.probs, run.remove.infinity_mass, run.remove.interval, pessimistic_estimate=True,
        rounded_probability_mass_function_add=run.add.probs, infinity_mass_add=run.add.infinity_mass,
        symmetric=False)


def pld(steps=None, epochs=None, sigma=None, *, stages=None, target=None,
        value_discretization_interval=DEFAULT_INTERVAL, progress=None):
    """The certified dominating PLD of the run (both directions) as a dp_accounting PrivacyLossDistribution.

    stages=[(100, 5), (400, 5)] with sigma, or [(100, 5, "1.2"), (400, 5, "1.5")]: the run in stages
    (its law from certifier.bounds.stages_v2; docs/compose.md).

    >>> p = pld(100, 10, "1.426215")                              # doctest: +SKIP
    >>> p.compose(from_gaussian_mechanism(2.0)).get_epsilon_for_delta(1e-5)  # doctest: +SKIP
    """
    def block():
        if steps is None or epochs is None or sigma is None:
            raise ParameterError("give steps, epochs and sigma (or stages=)")
        return dominating_run(steps, epochs, sigma, target=target,
                              value_discretization_interval=value_discretization_interval, progress=progress)
    form = door.given_form(stages, (steps, epochs, target), "stages= replaces steps, epochs and target")
    return to_dp_accounting(form.pick(block, lambda spec: dominating_product(
        spec, sigma, value_discretization_interval=value_discretization_interval)))


def write_pld(run: DominatingRun, path: str) -> None:
    """The pmfs as JSON (floats by their shortest round-trip repr: exact), written atomically."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(run.to_json(), f)
    os.replace(tmp, path)


def read_pld(path: str):
    """A file written by `sigmacert pld -o` as a dp_accounting PrivacyLossDistribution."""
    try:
        with open(path) as f:
            obj = json.load(f)
    except (OSError, ValueError) as err:
        raise ParameterError(f"cannot read the PLD file {path}: {err}") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise ParameterError(f"{path} is not a {FORMAT} file")
    try:
        interval = float(obj["value_discretization_interval"])

        def side(d):
            lo = int(d["lower_loss"])
            probs = {lo + j: float(p) for j, p in enumerate(d["probs"]) if float(p) > 0.0}
            inf = float(d["infinity_mass"])
            if any(not (0.0 <= p <= 1.0) for p in probs.values()) or not 0.0 <= inf <= 1.0:
                raise ValueError("probabilities outside [0, 1]")
            return DominatingPmf(probs, inf, interval)
        run = DominatingRun(int(obj["steps"]), int(obj["epochs"]), str(obj["sigma"]), str(obj["target"]),
                            str(obj["bound"]), str(obj["method"]), side(obj["remove"]), side(obj["add"]),
                            obj.get("privacy"), obj.get("stages"))
    except (KeyError, TypeError, ValueError) as err:
        raise ParameterError(f"{path} is not a valid {FORMAT} file: {err}") from None
    return to_dp_accounting(run)
