"""certifier.numerics.few_epochs_jump: the far upper tail of a few epochs with one big step in any epoch, against a
conditional Monte Carlo; the product law of the other epochs and the bound on its tail."""
import math

import numpy as np
import pytest
from scipy.special import erfcx

from certifier.errors import NumericsUnreliableError
from certifier.numerics import few_epochs_jump, one_jump
from certifier.numerics.big_step_tails import BigStepTails


def _one_big_step_mc(steps: int, epochs: int, sigma: float, eps: float, samples: int,
                     seed: int = 7) -> tuple[float, float]:
    """EM times the mean over samples of E[(L_1 ... L_E - a)_+ | every step but the first] (the first step's
    E (Y - c)_+ = c phi(z_c) (R(z_c - t) - R(z_c)) in closed form, R the Mills ratio, the other EM - 1 steps
    drawn): with no other step big in any sample (a big one has probability about delta), this is the sum over
    the EM steps of the term in which that step alone is big, as few_epochs_jump's sums are; with its standard
    error."""
    t, a = 1.0 / sigma, math.exp(eps)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(samples // 500):
        y = np.exp(t * rng.standard_normal((500, epochs * steps - 1)) - 0.5 * t * t)
        rest = y[:, :steps - 1].sum(axis=1)
        second = np.prod(y[:, steps - 1:].reshape(500, epochs - 1, steps).sum(axis=2) / steps, axis=1)
        c = steps * a / second - rest
        z = (np.log(c) + 0.5 * t * t) / t
        mills = math.sqrt(math.pi / 2.0) * (erfcx((z - t) / math.sqrt(2.0)) - erfcx(z / math.sqrt(2.0)))
        out.append((second / steps) * c * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi) * mills)
    g = epochs * steps * np.concatenate(out)
    return float(g.mean()), float(g.std() / math.sqrt(g.size))


@pytest.mark.parametrize("steps,epochs,sigma,eps,samples", [
    (1000, 2, 0.850932, 2.0, 40000), (3000, 2, 0.72, 3.0, 12000), (1000, 3, 0.858107, 2.0, 30000),
    (1000, 5, 0.86, 2.0, 8000), (3000, 10, 0.78, 2.0, 3000)])
def test_one_big_step_against_conditional_monte_carlo(steps, epochs, sigma, eps, samples):
    """delta_{Q||P} about 1e-12 of two to ten epochs: the sums agree with the Monte Carlo within 4 standard errors
    plus their estimate, and the estimate (the two cuts' change, mostly the terms with two big steps) is below 1 %."""
    got = few_epochs_jump.delta_qp(steps, sigma, epochs, eps)
    mean, se = _one_big_step_mc(steps, epochs, sigma, eps, samples)
    assert 1e-14 < got.value < 1e-10
    assert got.error < 1e-2 * got.value
    assert abs(got.value - mean) <= 4.0 * se + got.error


def test_the_estimate_holds_where_the_big_step_is_not_alone():
    """Few steps (M = 30, eps 3): the kink of the big step's law lies near the bulk of the small steps' mean and the
    terms with two big steps are large; the estimate says so (above 1 % of the value) and still holds the Monte
    Carlo value."""
    got = few_epochs_jump.delta_qp(30, 1.0, 2, 3.0)
    mean, se = _one_big_step_mc(30, 2, 1.0, 3.0, 100000)
    assert got.error > 1e-2 * abs(got.value)
    assert abs(got.value - mean) <= 4.0 * se + got.error


def _chain(law, factors, step):
    """The product law by one factor at a time on one fixed step (the former way: slow, no coarser steps)."""
    law = few_epochs_jump._trimmed(law)
    out = law
    for _ in range(factors - 1):
        out = few_epochs_jump._product(out, law, step)
    return out


def test_binary_powering_keeps_mass_and_mean_and_matches_the_chain(monkeypatch):
    """R, the product of E - 1 epochs' small-step means, by binary powering on steps growing with sqrt(k): its mass
    and mean are those of the factors (linear binning keeps both; the trimmed ends held round-off: their bound, with
    the round-off of every sample left out, is below 1e-12, the masses' change below 1e-14), and the sums at ten
    epochs agree with those on the one-factor-at-a-time chain on the fine step to 1e-4 (measured 7e-6; the estimate,
    the cuts' change, is 2.5e-3)."""
    tail = one_jump.cuts(10**6, 0.56)[0]
    first = few_epochs_jump._grid(tail.means[10**6])
    step = tail.means[10**6 - 1].dx * few_epochs_jump.STRIDE
    mass, mean = float(first.f.sum()), float(first.x @ first.f)
    power, chain = few_epochs_jump._power(first, 9, step), _chain(first, 9, step)
    assert power.x.size < chain.x.size
    assert abs(float(power.f.sum()) - mass**9) < min(1e-14, power.lost) and power.lost < 1e-12
    assert abs(float(power.x @ power.f) - mean**9) < 1e-14
    by_power = few_epochs_jump._sums(tail, 10, math.e)[0]
    monkeypatch.setattr(few_epochs_jump, "_power", _chain)
    by_chain = few_epochs_jump._sums(tail, 10, math.e)[0]
    assert abs(by_power - by_chain) < 1e-4 * by_chain


def test_the_product_bound_holds_a_monte_carlo_tail():
    """E[R; R >= r] for R the product of four means of 30 small steps (Y | Y <= b, drawn by rejection), at an r
    with about 1e-3 of the mass beyond: upper_product_bound lies above the Monte Carlo value, and below 1 (it is not
    the trivial bound); the union bound over one factor is the weaker here."""
    tail = one_jump.cuts(30, 1.0)[0]
    cut, t = tail.cut, 1.0
    rng = np.random.default_rng(3)
    y = np.exp(t * rng.standard_normal(4_000_000) - 0.5 * t * t)
    y = y[y <= cut.b][:30 * 4 * 30000].reshape(30000, 4, 30)
    r_values = np.prod(y.mean(axis=2), axis=1)
    r = float(np.quantile(r_values, 1.0 - 1e-3))
    mc = float(np.where(r_values >= r, r_values, 0.0).mean())
    bound = few_epochs_jump.upper_product_bound(cut, 4, r)
    assert mc <= bound < 1.0
    assert bound <= 4 * few_epochs_jump.upper_mean_bound(cut, r ** 0.25)


def test_rarer_cuts_beyond_three_epochs_keep_the_estimate_below_one_percent():
    """At (10^6, E, sigma 0.56, eps 1) the terms with two big steps grow with E; the cuts' shares shrink as 3 / E, so
    the estimate stays below 0.5 % from E = 3 to 100, and the value at 100 epochs lies within its estimate of the
    value on cuts ten times rarer still."""
    for epochs in (3, 10, 100):
        got = few_epochs_jump.delta_qp(10**6, 0.56, epochs, 1.0)
        assert got.error < 5e-3 * got.value
    tails = [one_jump.OneEpochTail(10**6, 0.56, share * 0.003) for share in one_jump.CUTS]
    rarer = few_epochs_jump._sums(tails[0], 100, math.e)[0]
    assert abs(got.value - rarer) <= got.error


def test_richardson_on_the_cut_share_meets_the_certified_bracket():
    """(10^6, 10, eps 1): a two-sided certificate (docs/coverage.md) put delta at sigma 0.558814 at or above
    1.000116e-12 and at 0.558816 at or below 0.99998e-12. The first value lies within a fifth of its estimate of its
    bound (4.5e-17 below it), the second below its bound; the value's cut alone lay 8.8e-16 below the first, a third
    of its estimate."""
    low, high = (few_epochs_jump.delta_qp(10**6, s, 10, 1.0) for s in (0.558814, 0.558816))
    assert abs(low.value - 1.000116e-12) < 0.2 * low.error and low.error < 3e-3 * low.value
    assert high.value <= 0.99998e-12 + 0.2 * high.error


def test_the_gate_declines_before_the_densities_where_the_bound_beyond_r_cut_is_the_value(monkeypatch):
    """(10^6, 1000 epochs, eps 1) at sigma 0.601538, where the exact sigma's search asked the route (delta about
    9e-13; the primary's estimate was 8.7e-14): many epochs carry the tail together and the bound beyond r_cut, known
    in closed form, is about the value, so the route's estimate (9.6e-13) could not be kept. Handed the caller's
    estimate as its bar, delta_qp declines without forming one_jump's densities (_cuts is never reached), and with no
    bar it serves an estimate at least that bound (so a declined estimate could never have been below the bar)."""
    steps, epochs, sigma, eps = 10**6, 1000, 0.6015376404162152, 1.0
    cut = one_jump.Cut.at(steps, 1.0 / sigma, few_epochs_jump._share(one_jump.CUTS[0], epochs))
    beyond = few_epochs_jump._beyond(cut, epochs, math.exp(eps))
    assert 5e-13 < beyond < 2e-12
    with monkeypatch.context() as patch:
        patch.setattr(few_epochs_jump, "_cuts", lambda *args: pytest.fail("the densities were formed"))
        with pytest.raises(NumericsUnreliableError):
            few_epochs_jump.delta_qp(steps, sigma, epochs, eps, bar=8.7e-14)
        with pytest.raises(NumericsUnreliableError):
            few_epochs_jump.delta_qp(steps, sigma, epochs, eps, bar=beyond)
    assert BigStepTails(steps, epochs, sigma).delta("qp", eps, 8.7e-14) is None
    got = few_epochs_jump.delta_qp(steps, sigma, epochs, eps)
    assert got.error >= beyond and beyond > 0.5 * got.value


@pytest.mark.parametrize("steps,epochs,sigma,eps,value,error", [
    (10**6, 10, 0.558814, 1.0, 1.0000711661284343e-12, 2.498583985889968e-15),
    (10**6, 100, 0.534717, 2.0, 9.999783832968936e-13, 2.8725884016123263e-15)])
def test_where_the_route_serves_the_gate_changes_nothing(steps, epochs, sigma, eps, value, error):
    """Where the route serves (the bound beyond r_cut far below the value), a bar just above its estimate lets it
    through and the value and estimate are those measured before the gate (to 1e-9; bit-identical on the machine
    that measured them), so the exact sigmas the route answers stay."""
    free = few_epochs_jump.delta_qp(steps, sigma, epochs, eps)
    barred = few_epochs_jump.delta_qp(steps, sigma, epochs, eps, bar=free.error * (1.0 + 1e-9))
    assert barred == free
    assert abs(free.value - value) <= 1e-9 * value and abs(free.error - error) <= 1e-9 * error
