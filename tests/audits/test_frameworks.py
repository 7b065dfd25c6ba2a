"""Audits from the frameworks: an Opacus accountant's state_dict (torch.save or JSON) read as the random-allocation
run it describes, and a jax_privacy BallsInBinsSampling as fixed bins; other mechanisms are refused."""
import json

import pytest

import sigmacert
from certifier.errors import ParameterError
from sigmacert.audits.frameworks import OtherMechanismError, audit_jax, audit_opacus, opacus_run


def _accountant_state(sigma, rate, steps):
    """A real state_dict of sigmacert.torch's random_allocation accountant after `steps` optimizer steps."""
    from trainer.opacus_accountant import RandomAllocationAccountant
    acc = RandomAllocationAccountant()
    for _ in range(steps):
        acc.step(noise_multiplier=sigma, sample_rate=rate)
    return acc.state_dict()


def test_opacus_history_torch_save(tmp_path):
    """1000 steps at sample rate 1/100 are E = 10 epochs of M = 100: the same audit as the run's own."""
    import torch
    torch.save(_accountant_state(1.426215, 0.01, 1000), tmp_path / "acc.pt")
    a = audit_opacus(str(tmp_path / "acc.pt"), epsilon="0.93", delta="1e-5")
    b = sigmacert.audit(100, 10, "1.426215", epsilon="0.93", delta="1e-5")
    assert (a.steps, a.epochs, a.sigma) == (100, 10, b.sigma)
    assert a.verdict == b.verdict == "FALSE" and a.interval == b.interval
    assert "Opacus accountant history" in a.source


def test_opacus_history_json_entries_add_epochs(tmp_path):
    state = {"history": [[1.5, 0.25, 8], [1.5, 0.25, 4]], "mechanism": "random_allocation"}
    assert opacus_run(state) == {"steps": 4, "epochs": 3, "sigma": "1.5"}
    p = tmp_path / "acc.json"
    p.write_text(json.dumps(state))
    assert audit_opacus(str(p), target="0.99").verdict == "HOLDS"


@pytest.mark.parametrize("state, sampler, match", [
    ({"history": [[1.4, 0.01, 1050]], "mechanism": "random_allocation"}, None, "not whole epochs"),
    ({"history": [[1.4, 0.03, 300]], "mechanism": "random_allocation"}, None, "sample rate 1/M"),
    ({"history": [[1.4, 0.01, 100], [1.5, 0.01, 100]], "mechanism": "random_allocation"}, None, "sigma per stage"),
    ({"history": [[1.4, 0.01, 100]], "mechanism": "rdp"}, None, "Poisson subsampling"),
    ({"history": [[1.4, 0.01, 100]], "mechanism": "rdp"}, "poisson", "another mechanism"),
    ({"history": [[1.4, 0.01, 100]], "mechanism": "prv"}, "shuffle", "another mechanism"),
    ({"history": [], "mechanism": "random_allocation"}, None, "empty"),
])
def test_opacus_refusals(state, sampler, match):
    with pytest.raises(ParameterError, match=match):
        opacus_run(state, sampler)


def test_poisson_history_stated_random_allocation():
    """A Poisson accountant's history whose batches the caller states came from Algorithm 1 is audited as that run."""
    run = opacus_run({"history": [[1.426215, 0.01, 1000]], "mechanism": "rdp"}, "random-allocation")
    assert run == {"steps": 100, "epochs": 10, "sigma": "1.426215"}
    with pytest.raises(OtherMechanismError):
        opacus_run({"history": [[1.426215, 0.01, 1000]], "mechanism": "rdp"})


def test_jax_balls_in_bins():
    """The strategy object and its configuration give the same fixed-bins audit (M = cycle_length, E = ceil(T/M))."""
    from jax_privacy.batch_selection import BallsInBinsSampling
    num = sigmacert.exact_privacy(100, 10, "4.5", delta=1e-5, scheme="fixed-bins").epsilon[1e-5].value
    a = audit_jax(BallsInBinsSampling(iterations=995, cycle_length=100), "4.5", epsilon="2", delta="1e-5")
    b = audit_jax({"type": "BallsInBinsSampling", "cycle_length": 100, "iterations": 995, "noise_multiplier": 4.5},
                  epsilon="2", delta="1e-5")
    assert a.scheme == b.scheme == "fixed-bins" and a.epochs == 10 and a.interval == b.interval
    assert float(a.interval[0]) < num < float(a.interval[1]) and a.verdict == ("HOLDS" if num < 2 else "FALSE")
    with pytest.raises(OtherMechanismError):
        audit_jax({"type": "CyclicPoissonSampling", "cycle_length": 100, "iterations": 1000}, "4.5", target="0.1")
