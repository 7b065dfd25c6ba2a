"""PyTorch integration of Algorithm 1 (extra `torch`, installed by `make test`)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from trainer import torch_backend as tb  # noqa: E402


def test_vmap_per_example_grads_match_single_backward():
    torch.manual_seed(0)
    model = tb.GroupNormCNN(10)
    params = tb._params(model)
    X = torch.randn(5, 64)
    y = torch.tensor([0, 3, 9, 3, 1])
    G = tb.per_example_grads(model, params, X, y)
    assert G.shape == (5, sum(p.numel() for p in model.parameters()))
    for i in range(5):
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(X[i:i + 1]), y[i:i + 1]).backward()
        ref = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        assert torch.allclose(G[i], ref, atol=1e-5)


def test_groupnorm_not_batchnorm():
    model = tb.GroupNormCNN(10)
    assert any(isinstance(m, torch.nn.GroupNorm) for m in model.modules())
    assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())


def test_torch_algorithm1_update_count_and_refusal():
    calls = []

    def opt(theta, S):
        calls.append(1)
        return theta - 0.1 * S

    X = np.random.default_rng(0).random((6, 64))
    y = np.arange(6) % 10
    r = tb.train_torch(tb.GroupNormCNN(10), X, y, n0=8, steps=20, epochs=3, sigma=1.0, clip_norm=1.0,
                       seed=1, optimizer=opt)
    assert r.updates == len(calls) == 60 and r.empty_steps > 0
    with pytest.raises(ValueError, match="more than N0"):
        tb.train_torch(tb.GroupNormCNN(10), X, y, n0=5, steps=2, epochs=1, sigma=1.0, clip_norm=1.0)


def test_torch_digits_learns():
    from trainer import data
    ds = data.load("digits")
    model = tb.GroupNormCNN(ds.n_classes)
    r = tb.train_torch(model, ds.X_train, ds.y_train, n0=len(ds.X_train), steps=10, epochs=2, sigma=1.0,
                       clip_norm=1.0, lr=1.0, seed=0)
    assert r.updates == 20
    assert tb.accuracy(model, r.theta, ds.X_test, ds.y_test) > 0.6
