"""Opacus's accountant slot `random_allocation` (trainer.opacus_accountant, docs/targets.md §6):
calibration through get_noise_multiplier and make_private_with_epsilon against the exact sigma,
training a small model with Algorithm 1's epoch sampler, get_epsilon from the history, refusals."""
from __future__ import annotations

import math

import pytest
import torch
from opacus import PrivacyEngine
from opacus.accountants.registry import create_accountant
from opacus.accountants.utils import get_noise_multiplier
from torch.utils.data import DataLoader, TensorDataset

import sigmacert
import sigmacert.torch as st
from certifier.errors import ParameterError
from certifier.numerics.stages_profile import exact_privacy_product
from certifier.numerics.targets import exact_privacy


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_registered_on_import():
    acc = create_accountant("random_allocation")
    assert isinstance(acc, st.RandomAllocationAccountant)
    assert acc.mechanism() == "random_allocation" and len(acc) == 0 and acc.get_epsilon(1e-5) == 0.0


@pytest.mark.parametrize("steps,epochs,eps", [(100, 10, 1.0), (20, 3, 2.0), (100, 10, 8.0)])
def test_get_noise_multiplier_is_never_below_the_exact_sigma(steps, epochs, eps):
    """(100, 10, eps 8) is a tail cell: Opacus's slot and the exact sigma use the same tilted line
    (docs/exact.md §8), so neither answers where the other refuses."""
    s = get_noise_multiplier(target_epsilon=eps, target_delta=1e-5, sample_rate=1 / steps, epochs=epochs,
                             accountant="random_allocation", epsilon_tolerance=1e-4)
    exact = float(sigmacert.exact_sigma(steps, epochs, epsilon=eps, delta=1e-5))
    assert exact <= s <= exact * (1 + 3e-4)
    # and the sigma Opacus returns meets the target by the exact profile
    assert exact_privacy(steps, epochs, s, epsilons=[eps]).delta[eps].value <= 1e-5


def test_epsilon_from_history_counts_partial_epochs_as_whole():
    m, e, sigma = 50, 4, 1.5
    full = exact_privacy(m, e, sigma, deltas=[1e-5], check=False).epsilon[1e-5]
    acc = st.RandomAllocationAccountant()
    for _ in range(m * e - 7):                       # three epochs and 43 steps: counts as four
        acc.step(noise_multiplier=sigma, sample_rate=1 / m)
    assert acc.history == [(sigma, 1 / m, m * e - 7)] and len(acc) == m * e - 7
    assert acc.get_epsilon(1e-5) == full.value + full.error
    for _ in range(8):                               # one step into a fifth epoch
        acc.step(noise_multiplier=sigma, sample_rate=1 / m)
    five = exact_privacy(m, e + 1, sigma, deltas=[1e-5], check=False).epsilon[1e-5]
    assert acc.get_epsilon(1e-5) == five.value + five.error
    assert five.value > full.value + full.error


def test_epsilon_reads_sigma_at_the_grid_point_below_and_is_monotone():
    acc = st.RandomAllocationAccountant()
    acc.history = [(1.3691905, 0.01, 1000)]
    at = exact_privacy(100, 10, 1.36919, deltas=[1e-5], check=False).epsilon[1e-5]
    assert acc.get_epsilon(1e-5) == at.value + at.error
    values = []
    for s in (0.8, 1.0, 1.4, 2.0):
        acc.history = [(s, 0.01, 1000)]
        values.append(acc.get_epsilon(1e-5))
    assert values == sorted(values, reverse=True)
    acc.history = [(0.01, 0.01, 1000)]              # below the numerics' range: no guarantee, inf
    assert acc.get_epsilon(1e-5) == math.inf


def _stages_eps(run, delta=1e-5):
    v = exact_privacy_product(run, deltas=[delta], check=False).epsilon[delta]
    return v.value + v.error


def test_heterogeneous_history_is_composed_as_stages():
    acc = st.RandomAllocationAccountant()
    acc.history = [(1.2, 0.01, 500), (1.5, 1 / 400, 2000)]          # 100x5@1.2 then 400x5@1.5
    assert st_history(acc) == [(100, 5, 1.2), (400, 5, 1.5)]
    eps = acc.get_epsilon(1e-5)
    assert eps == _stages_eps([(100, 5, "1.2"), (400, 5, "1.5")])
    alone = [exact_privacy(100, 5, 1.2, deltas=[1e-5]).epsilon[1e-5].value,
             exact_privacy(400, 5, 1.5, deltas=[1e-5]).epsilon[1e-5].value]
    assert eps > max(alone) + 1e-3
    # a partial epoch in a stage counts as a whole one; sigma is read at the 1e-6 grid point below
    acc.history = [(1.2000007, 0.01, 450), (1.5, 1 / 400, 1601)]
    assert st_history(acc) == [(100, 5, 1.2000007), (400, 5, 1.5)]
    assert acc.get_epsilon(1e-5) == eps
    # noise multipliers changing within one sample rate: separate stages when an epoch ended between them
    acc.history = [(1.0, 0.1, 20), (1.3, 0.1, 30)]
    assert st_history(acc) == [(10, 2, 1.0), (10, 3, 1.3)]
    assert acc.get_epsilon(1e-5) == _stages_eps([(10, 2, "1.0"), (10, 3, "1.3")])
    # ... joined at the smaller sigma, epochs added, when the change fell inside an epoch (one loader resumed)
    acc.history = [(1.3, 0.1, 25), (1.0, 0.1, 12), (2.0, 0.05, 20), (1.4, 0.1, 3)]
    assert st_history(acc) == [(10, 3 + 2 + 1, 1.0), (20, 1, 2.0)]   # 25 -> 3 epochs, then 12 -> 2, 3 -> 1
    assert acc.get_epsilon(1e-5) == _stages_eps([(10, 6, "1.0"), (20, 1, "2.0")])


def st_history(acc):
    from trainer.opacus_accountant import history_blocks
    return history_blocks(acc.history)


def test_refusals():
    acc = st.RandomAllocationAccountant()
    acc.history = [(1.0 + k / 100, 1 / (k + 2), k + 2) for k in range(65)]
    with pytest.raises(st.HeterogeneousHistoryError, match="at most 64 stages"):
        acc.get_epsilon(1e-5)
    acc.history = [(1.0, 0.1, 10), (1.0, 0.3, 5)]   # a later stage's 1/q is not an integer
    with pytest.raises(ParameterError, match="1/M"):
        acc.get_epsilon(1e-5)
    acc = st.RandomAllocationAccountant()
    acc.step(noise_multiplier=1.0, sample_rate=0.3)  # 1/q is not an integer number of steps
    with pytest.raises(ParameterError, match="1/M"):
        acc.get_epsilon(1e-5)


def test_epoch_sampler_yields_e_epochs_then_refuses():
    s = st.RandomAllocationEpochSampler(23, 5, 3, seed=4, n0=30)
    assert len(s) == 5
    for _ in range(3):
        epoch = list(s)
        assert len(epoch) == 5 and sorted(i for b in epoch for i in b) == list(range(23))
    with pytest.raises(st.RunExhaustedError):
        list(s)


def _problem(n=40, d=3):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, d, generator=g)
    y = (x[:, 0] > 0).long()
    model = torch.nn.Linear(d, 2)
    return TensorDataset(x, y), model, torch.optim.SGD(model.parameters(), lr=0.1)


def test_make_private_with_epsilon_trains_with_the_exact_sigma():
    m, e, eps = 8, 3, 4.0
    data, model, opt = _problem()
    loader = st.random_allocation_loader(data, m, e, seed=3)
    engine = PrivacyEngine(accountant="random_allocation")
    model, opt, loader = engine.make_private_with_epsilon(
        module=model, optimizer=opt, data_loader=loader, target_epsilon=eps, target_delta=1e-5, epochs=e,
        max_grad_norm=1.0, poisson_sampling=False, epsilon_tolerance=1e-3)
    exact = float(sigmacert.exact_sigma(m, e, epsilon=eps, delta=1e-5))
    assert exact <= opt.noise_multiplier <= exact * (1 + 3e-3)
    opt.expected_batch_size = loader.batch_sampler.b0      # line 7: divide by the public B0 = N0/M
    criterion = torch.nn.CrossEntropyLoss()
    before = [p.detach().clone() for p in model.parameters()]
    for _ in range(e):
        for x, y in loader:                                # empty batches still step and add noise
            opt.zero_grad()
            criterion(model(x), y).backward()
            opt.step()
    assert len(engine.accountant) == m * e
    assert engine.accountant.history == [(opt.noise_multiplier, 1 / m, m * e)]
    spent = engine.get_epsilon(1e-5)
    assert spent <= eps + 1e-3 and spent > eps - 0.05
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, model.parameters()))
    with pytest.raises(st.RunExhaustedError):
        next(iter(loader))


def test_two_stages_with_different_batch_sizes_train_and_compose():
    """make_private twice on one engine (Opacus keeps the accountant): stage 1 with M = 8 batches per epoch,
    stage 2 with M = 4 (larger batches) and more noise; get_epsilon composes them as stages."""
    (m1, e1, s1), (m2, e2, s2) = (8, 2, 1.1), (4, 3, 1.6)
    data, model, opt = _problem()
    engine = PrivacyEngine(accountant="random_allocation")
    criterion = torch.nn.CrossEntropyLoss()
    before = [p.detach().clone() for p in model.parameters()]
    for m, e, s, seed in ((m1, e1, s1, 3), (m2, e2, s2, 4)):
        loader = st.random_allocation_loader(data, m, e, seed=seed)
        model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                                 noise_multiplier=s, max_grad_norm=1.0, poisson_sampling=False)
        opt.expected_batch_size = loader.batch_sampler.b0
        for _ in range(e):
            for x, y in loader:
                opt.zero_grad()
                criterion(model(x), y).backward()
                opt.step()
    assert engine.accountant.history == [(s1, 1 / m1, m1 * e1), (s2, 1 / m2, m2 * e2)]
    spent = engine.get_epsilon(1e-5)
    assert spent == _stages_eps([(m1, e1, "1.1"), (m2, e2, "1.6")])
    own = [exact_privacy(m, e, s, deltas=[1e-5]).epsilon[1e-5] for m, e, s in ((m1, e1, s1), (m2, e2, s2))]
    assert all(spent > v.value + v.error for v in own)
    assert spent < sum(v.value + v.error for v in own)   # tighter than adding the two stages' eps
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, model.parameters()))


def test_make_private_refuses_poisson_and_foreign_loaders():
    data, model, opt = _problem()
    engine = PrivacyEngine(accountant="random_allocation")
    with pytest.raises(ParameterError, match="Poisson"):
        engine.make_private(module=model, optimizer=opt, data_loader=st.random_allocation_loader(data, 8, 3),
                            noise_multiplier=1.0, max_grad_norm=1.0, poisson_sampling=True)
    data, model, opt = _problem()
    engine = PrivacyEngine(accountant="random_allocation")
    with pytest.raises(ParameterError, match="random_allocation_loader"):
        engine.make_private(module=model, optimizer=opt, data_loader=DataLoader(data, batch_size=5, shuffle=True),
                            noise_multiplier=1.0, max_grad_norm=1.0, poisson_sampling=False)


def test_digits_example_epsilon_mode(tmp_path):
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "examples" / "opacus_digits.py"
    spec = importlib.util.spec_from_file_location("opacus_digits", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    m = mod.run_epsilon(2.0, 1e-5, 20, 2, str(tmp_path), seed=1)
    exact = float(sigmacert.exact_sigma(20, 2, epsilon=2, delta=1e-5))
    assert exact <= m["sigma"] <= exact * (1 + 3e-4)
    assert m["updates"] == 40 and 2.0 - 1e-3 < m["epsilon_spent"] <= 2.0
    assert m["test_accuracy"] > 0.1
    assert (tmp_path / "epsilon-run.json").exists()
