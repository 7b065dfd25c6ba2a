"""When step (ii) of method v1 runs with two-scale partial sums, and with which tail factor and split mass.

Loss model (the error model of methods.v1.plan applied to the tail): every path whose partial sum is in the tail
is re-rounded onto R g_i h at each of the n + 1 levels (the tail mass of a block of 2^i steps is about
2^i tau, and M/2^i blocks meet it), a spread of variance <= (R g h)^2/6 of one partial sum, so the loss
is about K (n + 1) tau (R g_n h)^2 / (6 M). At (250, 10) with R = 32, tau = 1e-6 it predicts 1.1e-10;
the bound moved by 5e-11 (docs/coverage.md).
"""
from __future__ import annotations

import dataclasses

from flint import fmpq

from certifier.bounds.two_scale import MIN_STEPS, TAIL_FACTOR
from certifier.methods.v1.plan import Model, Plan

SHARE = 0.15          # share of the grid's budget given to the two-scale tail
TAU_MAX = 1e-4        # at most this P-mass of a partial sum in its tail
TAU_MIN = 1e-9        # below this the body is (nearly) the whole law: no gain
TAU_GOOD = 1e-6       # a finer tail (smaller R) is taken before tau falls below this
FACTORS = (32, 16, 8, 4)


def two_scale_loss(mod: Model, h: float, g: list, R: int, tau: float) -> float:
    """Predicted loss of two-scale partial sums with tail factor R and split mass tau (module docstring)."""
    return mod.K * len(g) * tau * (R * g[-1] * h) ** 2 / (6 * mod.steps)


def with_two_scale(choose, steps: int, epochs: int, sigma, budget: float, R: int = TAIL_FACTOR) -> Plan:
    """choose(budget) -> Plan (a method-v1 grid, upper or lower); the grid planned on (1 - SHARE) budget and the
    rest given to two-scale partial sums: the largest tail factor in FACTORS (<= R) whose split mass tau is
    >= TAU_GOOD (else the smallest), or choose(budget) itself where M < MIN_STEPS or the rest allows no
    useful tau (< TAU_MIN)."""
    if steps < MIN_STEPS:
        return choose(budget)
    plan = choose(budget * (1 - SHARE))
    m = plan.method
    mod = Model.at(steps, epochs, float(sigma))
    h, g = float(m.h), [int(x) for x in m.lattice_schedule]
    for R in [r for r in FACTORS if r <= R]:          # the coarsest tail that still allows tau >= TAU_GOOD
        unit = two_scale_loss(mod, h, g, R, 1.0)
        tau = min(TAU_MAX, (budget - plan.predicted_loss) / unit) if unit > 0 else TAU_MAX
        if tau >= TAU_GOOD:
            break
    if tau < TAU_MIN:
        return choose(budget)
    tau_q = fmpq(int(tau * 1e12), 10**12)                # exact; only chooses the splits (they are recorded)
    loss = two_scale_loss(mod, h, g, R, float(tau_q))
    meth = dataclasses.replace(m, tail_factor=R, tail_tau=tau_q)
    return Plan(meth, plan.predicted_loss + loss, plan.predicted_seconds, budget,
                {**plan.detail, "two_scale": {"tail_factor": R, "tau": float(tau_q), "loss": loss}})
