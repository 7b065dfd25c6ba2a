"""PyTorch integration of Algorithm 1 (extra `torch`, pinned torch==2.13.0, CPU build).

Per-example gradients come from `torch.func` (vmap over grad of a functional_call), the sampler is
`trainer.allocation` and the noise is drawn from the same NumPy stream as the NumPy trainer, so a
NumPy model and a torch model see the same order, allocations and noise for the same seed.  The
reference model uses GroupNorm (per-record normalisation); batch normalisation would mix the
records of a step and is not allowed by Algorithm 1.
"""
from __future__ import annotations

import numpy as np

try:
    import torch
    from torch import nn
    from torch.func import functional_call, grad, vmap
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError("the torch backend needs the extra: pip install 'sigmacert[torch]' "
                      "(torch==2.13.0, CPU build)") from err

from trainer.algorithm import TrainResult, check_run, streams
from trainer.allocation import Allocation


class GroupNormCNN(nn.Module):
    """Small CNN for 8x8 digits: conv-GN-ReLU, strided conv-GN-ReLU, linear."""

    def __init__(self, n_classes: int = 10, side: int = 8):
        super().__init__()
        self.side = side
        self.net = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.ReLU(),
            nn.Conv2d(8, 16, 3, padding=1, stride=2), nn.GroupNorm(4, 16), nn.ReLU(),
            nn.Flatten(), nn.Linear(16 * (side // 2) ** 2, n_classes))

    def forward(self, x):
        return self.net(x.reshape(-1, 1, self.side, self.side))


def _params(model):
    return {k: v.detach().clone() for k, v in model.named_parameters()}


def per_example_grads(model, params, X, y):
    """(n, P) flattened per-record gradients of the cross-entropy, via torch.func.vmap(grad(.))."""
    names = list(params)

    def loss_one(p, x, t):
        out = functional_call(model, p, (x.unsqueeze(0),))
        return nn.functional.cross_entropy(out, t.unsqueeze(0))

    g = vmap(grad(loss_one), in_dims=(None, 0, 0))(params, X, y)
    return torch.cat([g[k].reshape(len(X), -1) for k in names], dim=1)


def flatten(params) -> torch.Tensor:
    return torch.cat([v.reshape(-1) for v in params.values()])


def unflatten(vec: torch.Tensor, like) -> dict:
    out, i = {}, 0
    for k, v in like.items():
        n = v.numel()
        out[k] = vec[i:i + n].reshape(v.shape)
        i += n
    return out


def train_torch(model, X, y, *, n0: int, steps: int, epochs: int, sigma: float, clip_norm: float,
                lr: float = 0.5, seed: int = 0, optimizer=None) -> TrainResult:
    """Algorithm 1 with a torch model; returns the flat final parameter vector as NumPy."""
    X = torch.as_tensor(np.asarray(X), dtype=torch.float32)
    y = torch.as_tensor(np.asarray(y), dtype=torch.long)
    n = len(X)
    check_run(n, n0, steps, epochs, sigma, clip_norm)
    alloc_rng, noise_rng, init_rng = streams(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(init_rng.integers(2 ** 62)))
        for m in model.modules():
            if hasattr(m, "reset_parameters") and m is not model:
                m.reset_parameters()
    params = _params(model)
    theta = flatten(params).to(torch.float64)
    b0 = n0 / steps
    sd = float(sigma) * float(clip_norm)
    alloc = Allocation(n0, steps, epochs, alloc_rng)
    updates = empty = 0
    for members in alloc.epochs_iter():
        for records in members:
            genuine = torch.as_tensor(records[records < n], dtype=torch.long)
            S = torch.zeros_like(theta)
            if len(genuine):
                p = {k: v.to(torch.float32) for k, v in unflatten(theta, params).items()}
                g = per_example_grads(model, p, X[genuine], y[genuine]).to(torch.float64)
                norms = g.norm(dim=1, keepdim=True)
                S += (g / torch.clamp(norms / clip_norm, min=1.0)).sum(dim=0)
            else:
                empty += 1
            noise = torch.from_numpy(noise_rng.standard_normal(theta.shape[0]))
            S = (S + sd * noise) / b0
            theta = optimizer(theta, S) if optimizer is not None else theta - lr * S
            updates += 1
    return TrainResult(theta=theta.numpy(), updates=updates, empty_steps=empty, b0=b0)


def accuracy(model, theta, X, y) -> float:
    p = {k: v.to(torch.float32) for k, v in unflatten(torch.as_tensor(theta), _params(model)).items()}
    with torch.no_grad():
        out = functional_call(model, p, (torch.as_tensor(np.asarray(X), dtype=torch.float32),))
    return float((out.argmax(dim=1).numpy() == np.asarray(y)).mean())
