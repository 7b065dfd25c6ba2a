"""Method `gaussian-shift` v1 (docs/method-v2.md §5): the pair with one step per epoch.

With M = 1 every epoch has one coordinate, so the pair is N(0, I_E) against N(t 1, I_E) and its
likelihood ratio depends only on the sum of the coordinates: a Gaussian shift by mu = sqrt(E t^2)
(Appendix C.4).  Everything is a closed form evaluated here in arb balls, from the claim alone.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from flint import arb, fmpq

from ..format.strict import working_prec
from .arith import dyadic
from .upper_v2 import pair


def shift(claim: dict, sigma: fmpq) -> arb:
    """mu = sqrt(E t^2) of the pair at sigma (t^2 = 1/sigma^2, or E/sigma^2 and E = 1 in fixed bins)."""
    _, E, t2 = pair({**claim, "sigma": sigma})
    return arb(E * t2).sqrt()


def tv(mu: arb) -> arb:
    """TV(N(0, 1), N(mu, 1)) = erf(mu / (2 sqrt 2)) (the ball contains the exact value)."""
    return (mu / (2 * arb(2).sqrt())).erf()


def delta(mu: arb, eps: fmpq) -> arb:
    """The hockey-stick divergence at eps, the same in both directions for a Gaussian shift:
    Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""
    phi = lambda x: (-x / arb(2).sqrt()).erfc() / 2
    e = arb(eps)
    return phi(-e / mu + mu / 2) - e.exp() * phi(-e / mu - mu / 2)


@dataclass
class Replay:
    bound: fmpq  # exact rational >= TV (upper side) or <= TV (lower side), on the grid 2^-400
    enclosures: dict
    seconds: dict
    mu: arb

    def deltas(self, eps: fmpq) -> tuple[arb, arb]:
        d = delta(self.mu, eps)
        return d, d


def replay(claim: dict, sigma: fmpq, m: dict, upper: bool = True) -> Replay:
    t0 = time.perf_counter()
    with working_prec(m["prec"]):
        mu = shift(claim, sigma)
        x = tv(mu)
        bound = fmpq(dyadic(x, upper, 400), 2**400)  # the ball's upper (lower) end, rounded outwards
    return Replay(bound, {"TV": x}, {"total": time.perf_counter() - t0}, mu)
