"""PyTorch / Opacus 1.6 for Algorithm 1 (extra `torch`, installed by `make test`): the batch sampler,
`make_private` from a verified certificate, the noise it adds, and the digits example."""
from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import TensorDataset

import sigmacert
from certifier.certificate.keys import keygen
from sigmacert.torch import (
    CertificateRefusedError,
    NoOpacusEpsilonError,
    RandomAllocationBatchSampler,
    RunExhaustedError,
    make_private,
)
from trainer.algorithm import streams
from trainer.allocation import Allocation
from trainer.opacus_glue import private_engine, public_size

ROOT = Path(__file__).resolve().parents[2]
M, E, SIGMA = 10, 5, "3"


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Steps of a few records: one intra-op thread is fastest, and the machine is shared."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    """A small random-allocation certificate issued here with a throw-away key (never committed)."""
    d = tmp_path_factory.mktemp("opacus")
    keygen(str(d / "keys"))
    c = sigmacert.certify(M, E, "0.1", SIGMA, key=d / "keys" / "private.pem", two_sided=False)
    path = d / "cert.json"
    c.write(str(path))
    return {"path": path, "public": d / "keys" / "public.pem", "dir": d}


def zero_gradient_problem(n: int, d: int):
    """Inputs 0 and targets 0: every per-record gradient of the linear model is exactly zero."""
    data = TensorDataset(torch.zeros(n, d), torch.zeros(n, 1))
    model = torch.nn.Linear(d, 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    return data, model, torch.optim.SGD(model.parameters(), lr=1.0)


def test_sampler_partitions_every_epoch_and_never_yields_ghosts():
    n, n0, steps, epochs = 37, 50, 6, 4
    batches = list(RandomAllocationBatchSampler(n, steps, epochs, seed=5, n0=n0))
    assert len(batches) == steps * epochs == len(RandomAllocationBatchSampler(n, steps, epochs, seed=5, n0=n0))
    for e in range(epochs):
        epoch = [i for b in batches[e * steps:(e + 1) * steps] for i in b]
        assert sorted(epoch) == list(range(n))          # each genuine record exactly once; no ghost index
    sizes = {len(b) for b in batches}
    assert len(sizes) > 1                                # variable batch sizes
    # the same order and allocations as the NumPy trainer's Algorithm 1 for the same seed
    alloc = Allocation(n0, steps, epochs, streams(5)[0])
    ref = [[int(i) for i in r[r < n]] for members in alloc.epochs_iter() for r in members]
    assert batches == ref
    assert batches == list(RandomAllocationBatchSampler(n, steps, epochs, seed=5, n0=n0))   # deterministic
    assert batches != list(RandomAllocationBatchSampler(n, steps, epochs, seed=6, n0=n0))


def test_sampler_allocation_is_uniform_over_steps():
    """Chi-square of the step counts of every record over 400 epochs (N0 = 30, M = 5): 120,000 draws."""
    steps = 5
    s = RandomAllocationBatchSampler(30, steps, 400, seed=1)
    counts = np.zeros(steps)
    for k, b in enumerate(s):
        counts[k % steps] += len(b)
    expected = 30 * 400 / steps
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 18.5          # 4 degrees of freedom: P(chi2 > 18.5) < 0.001


def test_sampler_is_one_run_and_checks_its_input():
    s = RandomAllocationBatchSampler(8, 2, 3, seed=0, n0=8)
    assert len(list(s)) == 6
    with pytest.raises(RunExhaustedError, match="already yielded"):
        list(s)
    with pytest.raises(sigmacert.ParameterError, match="more than N0"):
        RandomAllocationBatchSampler(9, 2, 3, seed=0, n0=8)
    for bad in (0, 2.5, True):
        with pytest.raises(sigmacert.ParameterError):
            RandomAllocationBatchSampler(8, bad, 3, seed=0)
    secret = [RandomAllocationBatchSampler(8, 2, 3, seed=None).seed for _ in range(2)]
    assert secret[0] != secret[1]                         # seed=None draws a fresh secret seed


def test_public_size():
    assert public_size(50, 10) == 50
    assert public_size(50, 10, n0=64) == 64
    assert public_size(50, 10, batch_size_hint=7) == 70
    for kwargs in ({"n0": 40}, {"batch_size_hint": 4}, {"n0": 64, "batch_size_hint": 7}, {"n0": 0}):
        with pytest.raises(sigmacert.ParameterError):
            public_size(50, 10, **kwargs)


def test_make_private_takes_sigma_M_E_from_the_certificate(cert):
    data, model, opt = zero_gradient_problem(50, 3)
    model, opt, loader = make_private(model, opt, data, certificate=cert["path"], public_key=cert["public"],
                                      clip_norm=0.5, n0=64)
    assert opt.noise_multiplier == float(SIGMA) and opt.max_grad_norm == 0.5
    assert opt.expected_batch_size == 64 / M                # B0 = N0/M, not Opacus's int(len / len(loader))
    s = loader.batch_sampler
    assert isinstance(s, RandomAllocationBatchSampler) and (s.steps, s.epochs, s.n0) == (M, E, 64)
    assert len(loader) == M * E and loader.run.sigma_text == SIGMA
    with pytest.raises(NoOpacusEpsilonError, match="sigmacert certificate"):
        loader.accountant.get_epsilon(1e-5)
    with pytest.raises(NoOpacusEpsilonError, match=f"M = {M}, E = {E}"):
        private_engine(loader.run).get_epsilon(1e-5)       # the engine's own epsilon call, too


def test_tampered_or_foreign_certificate_is_refused(cert):
    data, model, opt = zero_gradient_problem(4, 2)
    env = json.loads(cert["path"].read_text())
    env["signatures"][0]["sig"] = env["signatures"][0]["sig"][:-4] + ("AAAA" if not env["signatures"][0]["sig"]
                                                                       .endswith("AAAA") else "BBBB")
    bad = cert["dir"] / "tampered.json"
    bad.write_text(json.dumps(env))
    with pytest.raises(CertificateRefusedError, match=r"certificate rejected \(.+\).*refusing to train"):
        make_private(model, opt, data, certificate=bad, public_key=cert["public"], clip_norm=1.0)
    keygen(str(cert["dir"] / "other"))
    with pytest.raises(CertificateRefusedError, match="certificate rejected"):
        make_private(model, opt, data, certificate=cert["path"].read_bytes(),
                     public_key=(cert["dir"] / "other" / "public.pem").read_bytes(), clip_norm=1.0)
    with pytest.raises(sigmacert.ParameterError):
        make_private(model, opt, data, certificate=cert["path"], public_key=cert["public"], clip_norm=0.0)


def test_noise_std_per_step_is_sigma_C_over_B0(cert):
    """Zero gradients, N = 3 genuine records in N0 = 64: the update of each of the E*M steps, empty
    ones included, is -lr * N(0, sigma^2 C^2 I)/B0.  The sample variance of 50 x 4000 coordinates
    against (sigma C / B0)^2: z = (s^2/v - 1)/sqrt(2/(n-1))."""
    torch.manual_seed(0)
    d, clip = 4000, 2.0
    data, model, opt = zero_gradient_problem(3, d)
    model, opt, loader = make_private(model, opt, data, certificate=cert["path"], public_key=cert["public"],
                                      clip_norm=clip, n0=64, seed=3)
    prev, steps = model._module.weight.detach().clone(), []
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        w = model._module.weight.detach().clone()
        steps.append((w - prev).double().numpy().ravel())
        prev = w
    assert len(steps) == M * E == loader.accountant.steps and loader.batch_sampler.empty_steps > 10
    u = np.concatenate(steps)
    v = (float(SIGMA) * clip / (64 / M)) ** 2
    z = (u.var(ddof=1) / v - 1) / math.sqrt(2 / (u.size - 1))
    assert abs(z) < 4, z
    assert abs(u.mean()) < 4 * math.sqrt(v / u.size)
    # the test can fail: a noise scale 5 % off (sigma or the divisor B0) is far outside the band
    assert abs((u.var(ddof=1) / (1.05**2 * v) - 1) / math.sqrt(2 / (u.size - 1))) > 4
    with pytest.raises(RunExhaustedError, match="beyond the certified run"):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(data.tensors[0]), data.tensors[1]).backward()
        opt.step()                                                   # step E*M + 1 is refused


def test_a_few_steps_train(cert):
    from trainer import data as datasets
    torch.manual_seed(1)
    ds = datasets.load("digits")
    n = 400
    train = TensorDataset(torch.tensor(ds.X_train[:n], dtype=torch.float32), torch.tensor(ds.y_train[:n]))
    net = torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.Tanh(), torch.nn.Linear(16, 10))
    before = [p.detach().clone() for p in net.parameters()]
    model, opt, loader = make_private(net, torch.optim.SGD(net.parameters(), lr=0.2), train,
                                      certificate=cert["path"], public_key=cert["public"], clip_norm=1.0, seed=2)
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    after = list(net.parameters())
    assert loader.accountant.steps == M * E
    assert all(torch.isfinite(p).all() and not torch.equal(p, q) for p, q in zip(after, before))


def test_opacus_digits_example_writes_the_release(cert, tmp_path):
    spec = importlib.util.spec_from_file_location("opacus_digits", ROOT / "examples" / "opacus_digits.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = tmp_path / "release"
    keygen(str(tmp_path / "rel"), kind="ecdsa-p256")
    assert example.main(["--certificate", str(cert["path"]), "--key", str(cert["public"]), "-o", str(out),
                         "--seed", "0", "--lr", "0.5", "--release", str(tmp_path / "rel" / "private.pem"),
                         "--card"]) == 0
    import verifier
    from verifier.release import verify_release
    sealed = verify_release(str(out), [str(tmp_path / "rel" / "public.pem"), str(cert["public"])],
                            lambda d, k: verifier.verify_bytes(d, k))
    assert sealed.accepted, sealed.failures          # model.sig, manifest, run = claim, replay, card
    assert sealed.run["steps_done"] == M * E and sealed.run["sampler"].startswith("sigmacert.torch")
    manifest = json.loads((out / "release.json").read_text())
    assert manifest["certificate"]["claim"]["sigma"] == SIGMA
    assert manifest["training"]["updates"] == manifest["training"]["optimizer_steps_counted"] == M * E
    assert manifest["training"]["b0"] == pytest.approx(manifest["dataset"]["size"] / M)
    assert (out / "certificate.json").read_bytes() == cert["path"].read_bytes()
    theta = np.load(out / "model.npy")
    assert theta.size == manifest["model"]["parameters"] == 64 * 32 + 32 + 32 * 10 + 10
    assert 0.3 < manifest["test_accuracy"] <= 1.0             # well above chance (0.1) after 50 noisy steps
    assert example.main(["--certificate", str(cert["path"]), "--key", str(ROOT / "artifacts/keys/public.pem"),
                         "-o", str(tmp_path / "no")]) == 1   # wrong issuer: refused, nothing trained
    assert not (tmp_path / "no").exists()


def test_claim_scheme_reader():
    from trainer.certificates import claim_scheme
    assert claim_scheme({"mechanism": "dp-sgd/random-allocation"}) == "random-allocation"
    assert claim_scheme({"mechanism": "dp-sgd/fixed-bins"}) == "fixed-bins"
    assert claim_scheme({"mechanism": "dp-sgd/random-allocation", "scheme": "fixed-bins"}) == "fixed-bins"
    assert claim_scheme({"mechanism": "dp-sgd/poisson"}) is None
    assert claim_scheme({"mechanism": "dp-sgd/random-allocation", "scheme": "poisson"}) is None
    assert claim_scheme({"mechanism": "other/fixed-bins", "scheme": "fixed-bins"}) is None
