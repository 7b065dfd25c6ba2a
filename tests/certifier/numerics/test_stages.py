"""The exact TV and the exact shared sigma of a run in stages (certifier.numerics.stages)."""
import math

import numpy as np
import pytest
from scipy.stats import norm

from certifier.errors import ParameterError
from certifier.numerics.exact import exact_sigma, exact_tv
from certifier.numerics.stages import (
    OneStage,
    Product,
    Stage,
    closed_form_sigma_product,
    exact_sigma_product,
    exact_tv_product,
    parse_stage_list,
    product_of,
    shared_sigma_runs,
    tv_laplace_product,
    tv_logconv_product,
)

SIGMA = "1.426215"


@pytest.mark.parametrize("split", [[3, 7], [1, 9], [5, 5], [2, 3, 5], [1] * 10])
def test_splits_of_one_block_give_the_block(split):
    whole = exact_tv(100, 10, float(SIGMA))
    parts = exact_tv_product([(100, e, SIGMA) for e in split])
    assert abs(parts.tv - whole.tv) <= 1e-9
    assert parts.error <= 1e-9


def test_a_stage_of_one_epoch_is_the_single_route():
    assert exact_tv_product([(10, 1, "0.8")]).tv == exact_tv(10, 1, 0.8).tv


@pytest.mark.parametrize("runs", [[(1, 3, 1.0), (1, 4, 2.0)], [(1, 1, 0.5), (1, 20, 3.0)]])
def test_m1_stages_are_the_gaussian_closed_form(runs):
    mu = math.sqrt(sum(e / s ** 2 for _, e, s in runs))
    closed = 2.0 * norm.cdf(mu / 2.0) - 1.0
    assert abs(exact_tv_product([(m, e, str(s)) for m, e, s in runs]).tv - closed) <= 1e-13
    # the product route itself, with the exact M = 1 lines
    r = tv_laplace_product(runs)
    assert abs(r.tv - closed) <= max(1e-11, r.error)


def _m2_then_gaussian(sigma2: float, sigma1: float) -> float:
    """E_P (1 - L_2 e^{t'X' - t'^2/2})_+ with the inner Gaussian expectation in closed form:
    E (1 - c e^{Z})_+ = Phi(a) - c Phi(a - t'), a = (t'^2/2 - ln c)/t', then a 2-D trapezoid."""
    t, tp = 1.0 / sigma2, 1.0 / sigma1
    x, dx = np.linspace(-12.0, 12.0, 3001, retstep=True)
    y = np.exp(t * x - 0.5 * t * t)
    c = 0.5 * (y[:, None] + y[None, :])
    a = (0.5 * tp * tp - np.log(c)) / tp
    inner = norm.cdf(a) - c * norm.cdf(a - tp)
    w = norm.pdf(x) * dx
    return float(w @ inner @ w)


@pytest.mark.parametrize("sigma2,sigma1", [(0.7, 1.5), (1.2, 0.9)])
def test_m2_stage_with_a_gaussian_stage_against_quadrature(sigma2, sigma1):
    r = exact_tv_product([(2, 1, str(sigma2)), (1, 1, str(sigma1))])
    assert abs(r.tv - _m2_then_gaussian(sigma2, sigma1)) <= max(r.error, 1e-10)


def _mc(runs, n=200_000, seed=1):
    rng = np.random.default_rng(seed)
    log_lam = np.zeros(n)
    for m, e, s in runs:
        t = 1.0 / s
        for _ in range(e):
            log_lam += np.log(np.mean(np.exp(t * rng.standard_normal((n, m)) - 0.5 * t * t), axis=1))
    g = -np.expm1(np.minimum(log_lam, 0.0))
    return g.mean(), g.std(ddof=1) / math.sqrt(n)


def test_two_heterogeneous_stages_against_monte_carlo():
    runs = [(5, 3, 0.8), (20, 2, 1.1)]
    mean, se = _mc(runs)
    r = exact_tv_product([(m, e, str(s)) for m, e, s in runs])
    assert abs(r.tv - mean) <= 4.0 * se
    assert 0.05 < r.tv < 0.99  # a cell where the check means something


def test_the_two_routes_agree_on_heterogeneous_stages():
    runs = [(10, 2, 0.8), (30, 3, 1.0)]
    a = tv_laplace_product(runs)
    b, err = tv_logconv_product(runs)
    assert abs(a.tv - b) <= a.error + err + 1e-12
    assert "logconv" in exact_tv_product([(m, e, str(s)) for m, e, s in runs]).method


def test_order_of_stages_does_not_matter():
    a = exact_tv_product([(100, 5, "1.2"), (400, 5, "1.5")])
    b = exact_tv_product([(400, 5, "1.5"), (100, 5, "1.2")])
    assert abs(a.tv - b.tv) <= a.error + b.error


def test_more_noise_in_one_stage_lowers_the_tv():
    a = exact_tv_product([(100, 5, "1.2"), (400, 5, "1.5")]).tv
    b = exact_tv_product([(100, 5, "1.3"), (400, 5, "1.5")]).tv
    assert b < a


def test_huge_loss_gives_tv_one_by_the_bound():
    r = exact_tv_product([(2, 5, "0.06"), (3, 5, "0.07")])
    assert r.tv == 1.0 and r.error <= 1e-17


def test_exact_shared_sigma_of_a_split_is_the_blocks():
    assert exact_sigma_product([(100, 4), (100, 6)], 0.1) == exact_sigma(100, 10, 0.1) == "1.426215"


def test_exact_shared_sigma_is_least_on_the_grid():
    st = [(100, 5), (400, 5)]
    s = exact_sigma_product(st, 0.1)
    at = exact_tv_product([(m, e, s) for m, e in st])
    below = exact_tv_product([(m, e, f"{float(s) - 1e-6:.6f}") for m, e in st])
    assert at.tv + at.error <= 0.1 < below.tv - below.error


def test_exact_shared_sigma_m1_stages():
    # mu = sqrt(sum E_s) / sigma must meet 2 Phi(mu/2) - 1 = lambda: sigma = sqrt(10) / (2 z)
    z = norm.ppf(0.55)
    s = float(exact_sigma_product([(1, 4), (1, 6)], 0.1))
    assert math.sqrt(10) / (2 * z) <= s < math.sqrt(10) / (2 * z) + 1.01e-6


@pytest.mark.parametrize("spec", ["", "100x5,,400x5", "100x", "x5", "100x5@", "100", "100x5@1.2,400x5",
                                  "0x5@1", "100x0@1", "100x5@abc", "1e2x5", "100x5@-1"])
def test_malformed_stage_lists_are_parameter_errors(spec):
    with pytest.raises(ParameterError):
        parse_stage_list(spec)


def test_parse_forms():
    assert parse_stage_list("100x5,400x5") == (Stage(100, 5), Stage(400, 5))
    assert parse_stage_list([(100, 5, 1.2)]) == (Stage(100, 5, "1.2"),)
    with pytest.raises(ParameterError):
        parse_stage_list("100x5@1.2", sigma_per_stage=False)
    with pytest.raises(ParameterError):
        parse_stage_list("100x5", sigma_per_stage=True)
    with pytest.raises(ParameterError):
        parse_stage_list([(100,)])
    with pytest.raises(ParameterError):
        Stage(True, 5)


def test_a_stage_list_names_its_sigma_refusal_whatever_the_order_of_checks():
    with pytest.raises(ParameterError, match="or on none"):                 # a mixture, before what is asked
        parse_stage_list("100x5@1.2,400x5", sigma_per_stage=True)
    with pytest.raises(ParameterError, match="at least one stage is needed"):
        parse_stage_list([])
    assert parse_stage_list("100x5", sigma_per_stage=False) == parse_stage_list("100x5") == (Stage(100, 5),)


def test_one_stage_is_a_blocks_numerics_and_several_the_product():
    one, two = product_of((Stage(10, 1, "0.8"),)), product_of((Stage(10, 1, "0.8"), Stage(10, 2, "0.8")))
    assert isinstance(one, OneStage) and type(two) is Product and (one.suffix, two.suffix) == ("", " (stages)")
    assert one.exact_tv() == exact_tv(10, 1, 0.8) and two.exact_tv().method.endswith(" (stages)")
    runs = [(10, 1, 0.8), (10, 2, 0.8)]
    assert product_of(runs[:1]).pick(lambda r: r, len) == (10, 1, 0.8) and product_of(runs).pick(None, len) == 2


def test_shared_sigma_runs_put_every_stage_at_the_sigma():
    at = shared_sigma_runs(parse_stage_list("100x5,400x2"))
    assert at(1.5) == [(100, 5, 1.5), (400, 2, 1.5)]
    assert closed_form_sigma_product(parse_stage_list("100x5,400x2"), 0.1) > 0


def test_heavy_tailed_stages_against_monte_carlo():
    runs = [(10, 2, 0.4), (5, 3, 0.6)]  # sigma < 1/2: the lognormal tails the laplace route exists for
    mean, se = _mc(runs, seed=7)
    r = exact_tv_product([(m, e, str(s)) for m, e, s in runs])
    assert abs(r.tv - mean) <= 4.0 * se


@pytest.mark.parametrize("m,sigma", [(10_000, "0.5"), (3, "5"), (2, "0.3")])
def test_splits_at_the_corners_of_m_and_sigma(m, sigma):
    whole = exact_tv(m, 3, float(sigma))
    parts = exact_tv_product([(m, 1, sigma), (m, 2, sigma)])
    assert abs(parts.tv - whole.tv) <= 1e-9


def test_many_epochs_beside_a_heavy_stage_is_below_one_and_monotone():
    a = exact_tv_product([(3, 1000, "5"), (7, 1, "0.2")])
    b = exact_tv_product([(3, 1000, "5"), (7, 1, "0.25")])
    c = exact_tv(7, 1, 0.2)
    assert b.tv < a.tv < 1.0 and a.tv > c.tv  # adding a stage can only add information
