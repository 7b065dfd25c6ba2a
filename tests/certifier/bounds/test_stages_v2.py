"""Method v2's upper bound for a run in stages (certifier.bounds.stages_v2)."""
from dataclasses import replace

import pytest
from flint import fmpq

from certifier.bounds.stages_lower import lower_bound_v2_product
from certifier.bounds.stages_v2 import product_runs, rounding_bound_v2_product, t2_of
from certifier.bounds.upper_v2 import rounding_bound_v2
from certifier.errors import ParameterError
from certifier.methods.v2.plan import choose_v2
from certifier.numerics.stages import exact_tv_product
from certifier.params import parse_decimal


def _sigma(text):
    return parse_decimal("sigma", text)


def test_two_stages_of_one_block_give_the_blocks_bound_on_the_same_grid():
    t2 = t2_of(_sigma("1.426215"))
    m = replace(choose_v2(100, 10, t2, 1e-6, 0.0999999).method, level_bits=None)  # stages: one lattice a level
    block = rounding_bound_v2(100, 10, t2, m)
    split = rounding_bound_v2_product([(100, 3, t2), (100, 7, t2)], m)
    assert abs(float(split.ball.mid()) - float(block.ball.mid())) <= 1e-9
    assert float(split.bound) <= 0.1 + 1e-6 and split.stats["lines"] == 1


def test_heterogeneous_stages_bound_the_exact_tv_closely():
    s1, s2 = _sigma("1.2"), _sigma("1.5")
    m = choose_v2(400, 10, t2_of(s1), 1e-6, 0.09).method
    r = rounding_bound_v2_product([(100, 5, t2_of(s1)), (400, 5, t2_of(s2))], m)
    exact = exact_tv_product([(100, 5, "1.2"), (400, 5, "1.5")])
    assert exact.tv + exact.error <= float(r.ball.lower())        # a bound, not an estimate
    assert float(r.bound) - exact.tv <= 1e-5                        # and a close one
    assert r.stats["lines"] == 2


def test_order_of_stages_changes_only_the_roundings():
    s1, s2 = t2_of(_sigma("1.2")), t2_of(_sigma("1.5"))
    m = choose_v2(400, 10, s1, 1e-6, 0.09).method
    a = rounding_bound_v2_product([(100, 5, s1), (400, 5, s2)], m)
    b = rounding_bound_v2_product([(400, 5, s2), (100, 5, s1)], m)
    assert abs(float(a.bound) - float(b.bound)) <= 1e-6


@pytest.mark.parametrize("stages", [[], [(100, 0, fmpq(1))], [(100, 5, 1.0)], [(0, 5, fmpq(1))]])
def test_bad_stages_refused(stages):
    m = choose_v2(10, 2, fmpq(1), 1e-5, 0.2).method
    with pytest.raises(ParameterError):
        rounding_bound_v2_product(stages, m)


def test_product_runs_checks_both_sides_stage_lists_alike():
    assert product_runs(iter([(10, 2, fmpq(1))])) == [(10, 2, fmpq(1))]
    m = choose_v2(10, 2, fmpq(1), 1e-5, 0.2).method
    for bad, text in (([], "at least one stage is needed"), ([(10, 2, fmpq(-1))], "t\\^2 must be a positive"),
                      ([(10.0, 2, fmpq(1))], "integers >= 1")):
        for bound in (product_runs, lambda st: rounding_bound_v2_product(st, m),
                      lambda st: lower_bound_v2_product(st, m)):
            with pytest.raises(ParameterError, match=text):
                bound(bad)
