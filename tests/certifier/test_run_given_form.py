"""A run's given form, read in one place (certifier.run.given_form), and the run in stages' two sigma forms: the same
runs and the same one-line refusals as each face gave before."""
import argparse
from decimal import Decimal

import pytest

import sigmacert
from certifier.errors import ParameterError
from certifier.numerics.stages import Stage
from certifier.run import Block, OwnSigmas, Run, SharedSigma, StagedForm, given_form
from service.validate import Limits
from service.validate import run_of as service_run_of
from sigmacert.audits.api import stated
from sigmacert.cli.core import run_of as cli_run_of
from sigmacert.pld_export import pld


def test_given_form_reads_a_stage_list_or_a_block():
    assert given_form(None).pick(lambda: "block", lambda s: s) == "block"
    assert given_form(None, (1, 2), "never said").shape("b", "s") == "b"      # a block's arguments are its own
    assert given_form("100x5", (None, None)).pick(lambda: "block", lambda s: s) == "100x5"
    assert given_form([]) == StagedForm([])        # an empty list is a stage list: its parser refuses it
    with pytest.raises(ParameterError, match="^the words$"):
        given_form("100x5", (None, 7), "the words")


def test_the_run_in_stages_is_shared_or_own_sigma_from_construction():
    shared, own = Run.composed("100x5,400x5"), Run.composed("100x5@1.2,400x5@1.5")
    assert type(shared) is SharedSigma and type(own) is OwnSigmas and type(Run.block(100, 5)) is Block
    assert shared.staged and own.staged and not Run.block(100, 5).staged
    assert not shared.sigma_per_stage and own.sigma_per_stage and shared.one_sided_reason is None
    assert own.one_sided_reason == "a sigma per stage: no single sigma to step down"
    assert type(shared.at("1.3")) is OwnSigmas                  # every stage at a sigma: the stages carry it
    assert shared.where("1.3") == "sigma 1.3 (stages 100x5,400x5)"
    assert own.where(None) == "each stage's sigma (stages 100x5@1.2,400x5@1.5)"
    assert shared.stages_for_certificate() == ((100, 5), (400, 5))
    assert own.stages_for_certificate() == ((100, 5, Decimal("1.2")), (400, 5, Decimal("1.5")))
    assert shared.with_sigma("1.3") == Run.composed("100x5@1.3,400x5@1.3") and own.with_sigma(None) is own
    with pytest.raises(ParameterError, match=r"^give --sigma or a sigma per stage \(100x5@1.2,400x5@1.5\)$"):
        shared.with_sigma(None, "--sigma")
    with pytest.raises(ParameterError, match="^the stages carry their sigma already: drop --sigma$"):
        own.with_sigma("1.3", "--sigma")
    with pytest.raises(ParameterError, match="^give sigma=$"):
        Run.block(100, 5).with_sigma(None)


def test_in_sequence_is_a_block_for_one_and_a_run_in_stages_for_more():
    assert Run.in_sequence([(100, 5)]) == Run.block(100, 5)
    assert Run.in_sequence([(100, 5, "1.2")]) == Run.block(100, 5, sigma="1.2")
    assert Run.in_sequence([(100, 5), (400, 5)]) == Run.composed([Stage(100, 5), Stage(400, 5)])
    with pytest.raises(KeyError, match="65"):
        Run.in_sequence([(10, 1)] * 65, lambda n: KeyError(n))


def _args(**kw):
    base = dict(stages=None, steps=None, epochs=None, iterations=None, scheme="random-allocation")
    return argparse.Namespace(**{**base, **kw})


@pytest.mark.parametrize("call, words", [
    (lambda: sigmacert.exact_tv(stages="100x5", steps=100, sigma="1"), "stages= replaces steps, epochs and iterations"),
    (lambda: sigmacert.exact_tv(stages="100x5,400x5"), "give sigma= or a sigma on every stage"),
    (lambda: sigmacert.exact_tv(stages="100x5@1.2", sigma="1"), "the stages carry their sigma already: drop sigma="),
    (lambda: sigmacert.exact_tv(100, 5), r"give steps, epochs and sigma \(or stages=\)"),
    (lambda: sigmacert.exact_sigma(stages="100x5", scheme="fixed-bins", target="0.1"),
     r"stages are for random allocation \(Algorithm 1\) only"),
    (lambda: cli_run_of(_args(stages="100x5", epochs="5"), None),
     "--stages replaces --steps, --epochs and --iterations"),
    (lambda: cli_run_of(_args(), None), r"give --steps \(with --epochs\) or --stages"),
    (lambda: cli_run_of(_args(stages="100x5", scheme="fixed-bins"), None),
     r"--stages is for random allocation \(Algorithm 1\) only"),
    (lambda: service_run_of("100x5", None, 5, None, None, Limits()),
     "stages replaces steps, epochs and iterations: give one or the other"),
    (lambda: service_run_of(None, None, 5, None, None, Limits()), r"give steps \(with epochs\) or stages"),
    (lambda: stated(100, None, "1", stages="50x4", target="0.1"), "give either stages or steps and epochs, not both"),
    (lambda: stated(None, None, "1", target="0.1"),
     r"an audit needs steps and epochs \(or iterations\), or stages, and sigma"),
    (lambda: pld(stages="100x5", target="0.1"), "stages= replaces steps, epochs and target"),
    (lambda: pld(stages="100x5@1.2", sigma="1"), "the stages carry their sigma already: drop sigma$"),
    (lambda: pld(stages="100x5"), "give sigma or a sigma on every stage"),
])
def test_each_face_refuses_in_its_own_words(call, words):
    with pytest.raises(ParameterError, match=f"^{words}"):
        call()


def test_each_face_reads_the_same_run():
    assert cli_run_of(_args(stages="100x5@1.2,400x5@1.5"), None) == Run.composed("100x5@1.2,400x5@1.5")
    assert cli_run_of(_args(steps="100", epochs="5"), None) == Run.block(100, 5)
    assert stated(None, None, "1", stages="50x4,200x2", target="0.1").run == Run.composed("50x4,200x2")
    shape = service_run_of("100x5,400x5", None, None, None, None, Limits())
    assert shape == {"stages": [{"steps": 100, "epochs": 5}, {"steps": 400, "epochs": 5}], "steps": None,
                     "epochs": 10, "scheme": "random-allocation", "iterations": None}
