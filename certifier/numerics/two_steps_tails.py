"""M = 2, E = 1: the hockey-stick divergences by one integral over the first step, to a relative error.

With Y_i = e^{t X_i - t^2/2} (t = 1/sigma, X_i iid N(0, 1) under P), L_2 = (Y_1 + Y_2)/2 and a = e^eps, the
second step's expectation given X_1 = x (Y_1 = y) is a lognormal option in closed form:

  delta_{Q||P}(eps) = E_P (L_2 - a)_+ = int_{-inf}^{k} phi(x) C(2a - y)/2 dx + int_{k}^{inf} phi(x) ((y + 1)/2 - a) dx,
  delta_{P||Q}(eps) = E_P (1 - a L_2)_+ = int_{-inf}^{k'} phi(x) (a/2) P(2/a - y) dx,

k, k' where y = 2a, resp. 2/a; C(b) = E(Y - b)_+ and P(b) = E(b - Y)_+. With x_b = (ln b + t^2/2)/t (Y = b there)
and R(x) = Phibar(x)/phi(x) (Mills' ratio, R(x) = sqrt(pi/2) erfcx(x/sqrt 2)):

    C(b) = b phi(x_b) [R(x_b - t) - R(x_b)],       P(b) = b phi(x_b) [R(-x_b) - R(t - x_b)]

(C: x = x_b + u, Y - b = b (e^{tu} - 1); P likewise), a difference of two values of a smooth function, where the
textbook Phi(x_b - t)... forms subtract two tails that agree to many digits (a far out-of-the-money option). The
closed part of delta_{Q||P}, Phi(t - k)/2 - (a - 1/2) Phi(-k), is phi(k) [a (R(k - t) - R(k)) + R(k)/2] by the same
identity (y = 2a at k).
The integrals below the kink have smooth integrands; scipy's adaptive Gauss-Kronrod (quad) at relative tolerance
1e-11 sums them; the error is its own estimate plus the Mills differences' round-off: R(x - t) - R(x) ~ t R(x)/x
loses x/t of R's digits, and e^L for L = ln b - x^2/2 loses |L| ulps: 1e-15 (1 + X/t) + 2e-16 X^2 of the value with
X = 40 (beyond, phi(x) weighs nothing).
Independent of the moment lines (no transform, no grid): the direct route at M = 2, E = 1 in the tails.
Floating point with an a-posteriori estimate, not a certificate.
"""
from __future__ import annotations

import math

from scipy.integrate import quad
from scipy.special import log_ndtr, ndtr

from certifier.numerics.one_jump import mills

RTOL = 1e-11          # quad's relative tolerance
X_MAX = 40.0          # |x_b| that still weighs (phi(40) ~ 1e-348)
MILLS_FROM = -5.0     # below this argument R(x) ~ sqrt(2 pi) e^{x^2/2} grows: the plain form has no cancellation
LOG_PHI0 = -0.5 * math.log(2.0 * math.pi)


def _log_phi(x: float) -> float:
    return LOG_PHI0 - 0.5 * x * x


def call(b: float, t: float) -> float:
    """C(b) = E(Y - b)_+ for Y = e^{tX - t^2/2}, b > 0."""
    xb = (math.log(b) + 0.5 * t * t) / t
    if xb - t < MILLS_FROM:
        return float(ndtr(t - xb)) - b * float(ndtr(-xb))       # in the money: >= 1 - b, no cancellation
    return math.exp(math.log(b) + _log_phi(xb)) * float(mills(xb - t) - mills(xb))


def put(b: float, t: float) -> float:
    """P(b) = E(b - Y)_+ for Y = e^{tX - t^2/2}, b > 0."""
    xb = (math.log(b) + 0.5 * t * t) / t
    if -xb < MILLS_FROM:
        return b * float(ndtr(xb)) - float(ndtr(xb - t))       # in the money: >= b - 1 > 0
    return math.exp(math.log(b) + _log_phi(xb)) * float(mills(-xb) - mills(t - xb))


def _roundoff(t: float) -> float:
    """The Mills differences' round-off, relative to the value."""
    return 1e-15 * (1.0 + X_MAX / t) + 2e-16 * X_MAX * X_MAX


def _integral(f, lo: float, hi: float) -> tuple[float, float]:
    """int_lo^hi f by quad at relative tolerance RTOL, split at the interval's last units (where y nears its kink)."""
    points = [p for p in (hi - 8.0, hi - 2.0, hi - 0.5, 0.0) if lo < p < hi]
    value, err = quad(f, lo, hi, points=sorted(points) or None, epsabs=0.0, epsrel=RTOL, limit=400)
    return float(value), float(err)


def _low(k: float) -> float:
    """The lower end: phi's mass below it is under 1e-300 of phi(k)'s neighbourhood (the integrands are bounded
    below k by their value at -inf times phi)."""
    return min(k, 0.0) - 40.0


def delta_qp(sigma: float, eps: float) -> tuple[float, float]:
    """(delta_{Q||P}(eps), error estimate) at M = 2, E = 1."""
    t, a = 1.0 / sigma, math.exp(eps)
    k = (math.log(2.0 * a) + 0.5 * t * t) / t                       # y = 2a
    if k - t < MILLS_FROM:   # k < 0: 2a < 1, both terms positive
        above = 0.5 * float(ndtr(t - k)) - (a - 0.5) * float(ndtr(-k))
    else:
        above = math.exp(_log_phi(k)) * float(a * (mills(k - t) - mills(k)) + 0.5 * mills(k))

    def f(x: float) -> float:
        y = math.exp(t * x - 0.5 * t * t)
        return math.exp(_log_phi(x)) * 0.5 * call(2.0 * a - y, t) if y < 2.0 * a else 0.0
    below, err = _integral(f, _low(k), k)
    value = below + above
    return value, err + _roundoff(t) * value


def delta_pq(sigma: float, eps: float) -> tuple[float, float]:
    """(delta_{P||Q}(eps), error estimate) at M = 2, E = 1."""
    t, a = 1.0 / sigma, math.exp(eps)
    k = (math.log(2.0 / a) + 0.5 * t * t) / t                       # y = 2/a
    if float(log_ndtr(k)) < -700.0:
        return 0.0, 0.0                                              # below 1e-300: P(Y_1 < 2/a) bounds it

    def f(x: float) -> float:
        y = math.exp(t * x - 0.5 * t * t)
        return math.exp(_log_phi(x)) * 0.5 * a * put(2.0 / a - y, t) if y < 2.0 / a else 0.0
    value, err = _integral(f, _low(k), k)
    return value, err + _roundoff(t) * value


def delta(sigma: float, eps: float, side: str) -> tuple[float, float]:
    return delta_qp(sigma, eps) if side == "qp" else delta_pq(sigma, eps)
