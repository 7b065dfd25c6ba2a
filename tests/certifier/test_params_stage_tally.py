"""A stage list's shape as its checks read it (params.StageTally, at_least_one_stage; plan_cost.stages_pair)."""
import pytest

from certifier.errors import ParameterError
from certifier.params import StageTally, at_least_one_stage
from certifier.plan_cost import stages_pair


def test_no_stage_is_refused_by_the_count_and_by_the_tally():
    for make in (lambda: at_least_one_stage(0), lambda: StageTally(0), lambda: StageTally.of([])):
        with pytest.raises(ParameterError, match="^at least one stage is needed$"):
            make()
    at_least_one_stage(1)


@pytest.mark.parametrize("flags,per_stage,refusal", [
    ([True, False], None, "give a sigma on every stage (100x5@1.2,400x5@1.5) or on none"),
    ([True, False], True, "give a sigma on every stage (100x5@1.2,400x5@1.5) or on none"),
    ([False, False], True, "every stage needs its sigma here: 100x5@1.2,400x5@1.5"),
    ([True], False, "the stages share one sigma here: write them without @sigma (100x5,400x5)"),
])
def test_a_refused_cover_says_why(flags, per_stage, refusal):
    with pytest.raises(ParameterError) as err:
        StageTally.of(flags).require(per_stage)
    assert str(err.value) == refusal


@pytest.mark.parametrize("flags,per_stage", [([True, True], True), ([True], None), ([False, False], False),
                                             ([False], None)])
def test_an_accepted_cover_passes(flags, per_stage):
    tally = StageTally.of(flags)
    tally.require(per_stage)
    assert (tally.count, tally.every, tally.mixed) == (len(flags), all(flags), False)


def test_a_stage_is_named_only_beside_others():
    assert StageTally(1).label(1) == "" and StageTally(3).label(2) == "stage 2: "


def test_a_staged_run_records_its_pair_in_the_plan():
    assert stages_pair(((100, 5), (400, 2))) == (400, 7) and stages_pair(((1, 5), (1, 3))) == (1, 8)
