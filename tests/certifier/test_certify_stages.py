"""A certificate for a run in stages (certifier.certify.certify_run, certifier.methods.v2.stages): both sides,
the merged grid, refusals."""
from dataclasses import replace

import pytest
from flint import fmpq

from certifier.bounds.lower_v2 import lower_bound_v2
from certifier.bounds.stages_lower import lower_bound_v2_product
from certifier.bounds.stages_v2 import rounding_bound_v2_product, t2_of
from certifier.bounds.upper_v2 import rounding_bound_v2
from certifier.certify import certify_run
from certifier.errors import ParameterError
from certifier.methods.v2.plan import choose_v2
from certifier.methods.v2.stages import plan_product
from certifier.numerics.exact import exact_tv
from certifier.numerics.stages import exact_tv_product
from certifier.params import parse_decimal
from certifier.run import Run
from certifier.shape import refuse_staged_options

SIGMA = parse_decimal("sigma", "1.2")


def test_stages_10x1_10x2_reproduce_the_block_10_3_on_the_same_grid():
    t2 = t2_of(SIGMA)
    one = exact_tv(10, 3, 1.2)
    split = exact_tv_product([(10, 1, "1.2"), (10, 2, "1.2")])
    assert abs(split.tv - one.tv) <= 1e-9
    m = replace(choose_v2(10, 3, t2, 1e-6, one.tv).method, level_bits=None)   # stages: one lattice a level
    up_block, up_split = rounding_bound_v2(10, 3, t2, m), rounding_bound_v2_product([(10, 1, t2), (10, 2, t2)], m)
    assert abs(float(up_block.ball.mid()) - float(up_split.ball.mid())) <= 1e-9
    lo_block, lo_split = lower_bound_v2(10, 3, t2, m), lower_bound_v2_product([(10, 1, t2), (10, 2, t2)], m)
    assert abs(float(lo_block.exact) - float(lo_split.exact)) <= 1e-9
    assert float(lo_split.exact) < one.tv - one.error and one.tv + one.error < float(up_split.ball.lower())


def test_heterogeneous_stages_lower_below_exact_below_upper_on_the_merged_grid():
    stages = [(10, 2), (40, 1)]
    exact = exact_tv_product([(m, e, "1.2") for m, e in stages])
    plan = plan_product(stages, t2_of(SIGMA), 1e-6, exact.tv)
    runs = [(m, e, t2_of(SIGMA)) for m, e in stages]
    low, up = lower_bound_v2_product(runs, plan.method), rounding_bound_v2_product(runs, plan.method)
    assert float(low.exact) < exact.tv - exact.error
    assert exact.tv + exact.error < float(up.ball.lower())
    assert float(up.bound) - float(low.exact) < 2e-6          # and both close
    # the merged grid covers every stage's plan: the finest h and eta, the widest top
    alone = [plan_product([(m, 3)], t2_of(SIGMA), 1e-6, exact.tv).method for m, _ in stages]
    assert plan.method.h <= min(a.h for a in alone) and plan.method.eta <= min(a.eta for a in alone)
    assert all(plan.method.h * 2 ** (plan.method.mantissa_bits + plan.method.top_octave + 1)
               >= a.h * 2 ** (a.mantissa_bits + a.top_octave + 1) for a in alone)


def test_lower_stages_deleted_mass_is_recorded_and_the_bound_is_exact():
    t2 = t2_of(SIGMA)
    m = choose_v2(10, 3, t2, 1e-6, 0.2).method
    L = lower_bound_v2_product([(10, 1, t2), (5, 2, t2)], m)
    w, u, d = (parse_decimal(k, L.enclosures[k].strip("[").split(" ")[0]) for k in ("W_A", "U_A", "deleted_p"))
    assert d >= 0 and abs(float(w - u - d) - float(L.exact)) < 1e-15


GOOD = dict(steps=None, epochs=None, scheme="random-allocation", method="auto", kind_name="tv", iterations=None,
            grid=(None, None, None))


@pytest.mark.parametrize("kw", [dict(steps=10), dict(epochs=3), dict(scheme="fixed-bins"),
                                dict(iterations=30), dict(method="v1"), dict(grid=(None, "0.001", None))])
def test_stages_refuse_what_they_do_not_cover(kw):
    refuse_staged_options(**GOOD)                                    # the defaults pass, and every kind
    refuse_staged_options(**{**GOOD, "kind_name": "dp"})
    with pytest.raises(ParameterError):
        refuse_staged_options(**{**GOOD, **kw})


@pytest.mark.parametrize("stages, target, kw", [
    ([], fmpq(1, 10), {}), ([(10, 0)], fmpq(1, 10), {}), ("10x1,", fmpq(1, 10), {}), ([(10, 1)], fmpq(1), {}),
    ([(10, 1)], 0.1, {}),
    ([(10, 1, "1.2")], fmpq(1, 10), {"sigma": fmpq(6, 5)}),                 # a sigma per stage and a shared one
    ([(10, 1, "1.2")], fmpq(1, 10), {"two_sided": True}),                   # a sigma per stage: one-sided only
    ([(10, 1, "1.2"), (10, 1)], fmpq(1, 10), {}),                           # sigma on some stages only
    ([(10, 1, "0")], fmpq(1, 10), {}), ([(10, 1, "-1")], fmpq(1, 10), {}), ([(10, 1, "1.2.3")], fmpq(1, 10), {}),
    ([(10, 1)], fmpq(1, 10), {"kind_name": "dp"}),                          # dp without its epsilon
    ([(10, 1)], fmpq(1, 10), {"kind_name": "dp", "kind_params": {"epsilon": "101"}}),
    ([(10, 1)], fmpq(1, 10), {"kind_name": "rdp", "kind_params": {}}),
])
def test_bad_stage_lists_and_targets_refused(stages, target, kw):
    with pytest.raises(ParameterError):
        certify_run(Run.composed(stages), target, **kw)


def test_every_stage_plan_keeps_the_epoch_sum_on_its_lattice():
    """A stage of 400 steps at sigma 1.5 once lost 0.46 (its plan's top octave below the epoch sum of M
    steps); with the rows' eps range every plan covers it, alone or beside another stage's own sigma."""
    from certifier.bounds.stages_v2 import t2_of
    a, b = t2_of(parse_decimal("sigma", "1.2")), t2_of(parse_decimal("sigma", "1.5"))
    for runs, sigmas in (([(400, 1, b)], ["1.5"]), ([(10, 1, a), (400, 1, b)], ["1.2", "1.5"])):
        exact = exact_tv_product([(m, e, s) for (m, e, _), s in zip(runs, sigmas)])
        up = rounding_bound_v2_product(runs, plan_product(runs, None, 1e-6, exact.tv).method)
        assert exact.tv + exact.error <= float(up.bound) <= exact.tv + 2e-6
