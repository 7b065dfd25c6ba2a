"""NumPy models with per-example gradients (per-record losses only; no layer mixes records).

Every model keeps its parameters in one flat float64 vector `theta`, so Algorithm 1 can clip,
sum and add noise without knowing the architecture.
"""
from __future__ import annotations

import numpy as np

from certifier.errors import ParameterError


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _onehot(y: np.ndarray, k: int) -> np.ndarray:
    out = np.zeros((len(y), k))
    out[np.arange(len(y)), y] = 1.0
    return out


class LogisticRegression:
    """Multinomial logistic regression: logits = x W + b, cross-entropy loss."""

    name = "logreg"

    def __init__(self, n_features: int, n_classes: int):
        self.d, self.k = int(n_features), int(n_classes)
        self.size = self.d * self.k + self.k

    def init(self, rng: np.random.Generator) -> np.ndarray:
        return np.zeros(self.size)  # data-independent initial model

    def _unpack(self, theta):
        return theta[: self.d * self.k].reshape(self.d, self.k), theta[self.d * self.k:]

    def logits(self, theta, X):
        W, b = self._unpack(theta)
        return X @ W + b

    def per_example_grads(self, theta, X, y) -> np.ndarray:
        """(n, size): gradient of each record's own loss."""
        r = _softmax(self.logits(theta, X)) - _onehot(y, self.k)  # (n, k)
        gW = np.einsum("nd,nk->ndk", X, r).reshape(len(X), -1)
        return np.concatenate([gW, r], axis=1)

    def loss(self, theta, X, y) -> np.ndarray:
        p = _softmax(self.logits(theta, X))
        return -np.log(np.clip(p[np.arange(len(y)), y], 1e-300, None))

    def predict(self, theta, X):
        return np.argmax(self.logits(theta, X), axis=1)


class MLP:
    """One hidden layer, tanh, softmax output: h = tanh(x W1 + b1), logits = h W2 + b2."""

    name = "mlp"

    def __init__(self, n_features: int, n_classes: int, hidden: int = 32):
        self.d, self.k, self.h = int(n_features), int(n_classes), int(hidden)
        self.shapes = [(self.d, self.h), (self.h,), (self.h, self.k), (self.k,)]
        self.size = sum(int(np.prod(s)) for s in self.shapes)

    def init(self, rng: np.random.Generator) -> np.ndarray:
        """Glorot-uniform weights, zero biases; drawn from `rng`, independent of the data."""
        a1 = np.sqrt(6.0 / (self.d + self.h))
        a2 = np.sqrt(6.0 / (self.h + self.k))
        return np.concatenate([rng.uniform(-a1, a1, self.d * self.h), np.zeros(self.h),
                               rng.uniform(-a2, a2, self.h * self.k), np.zeros(self.k)])

    def _unpack(self, theta):
        out, i = [], 0
        for s in self.shapes:
            n = int(np.prod(s))
            out.append(theta[i:i + n].reshape(s))
            i += n
        return out

    def _forward(self, theta, X):
        W1, b1, W2, b2 = self._unpack(theta)
        H = np.tanh(X @ W1 + b1)
        return H, H @ W2 + b2

    def logits(self, theta, X):
        return self._forward(theta, X)[1]

    def per_example_grads(self, theta, X, y) -> np.ndarray:
        W1, b1, W2, b2 = self._unpack(theta)
        H, Z = self._forward(theta, X)
        r = _softmax(Z) - _onehot(y, self.k)            # dL/dZ, (n, k)
        gW2 = np.einsum("nh,nk->nhk", H, r)
        dH = (r @ W2.T) * (1.0 - H * H)                 # (n, h)
        gW1 = np.einsum("nd,nh->ndh", X, dH)
        n = len(X)
        return np.concatenate([gW1.reshape(n, -1), dH, gW2.reshape(n, -1), r], axis=1)

    def loss(self, theta, X, y) -> np.ndarray:
        p = _softmax(self.logits(theta, X))
        return -np.log(np.clip(p[np.arange(len(y)), y], 1e-300, None))

    def predict(self, theta, X):
        return np.argmax(self.logits(theta, X), axis=1)


MODELS = {"logreg": LogisticRegression, "mlp": MLP}


def make_model(name: str, n_features: int, n_classes: int):
    if name not in MODELS:
        raise ParameterError(f"unknown model {name!r} (choose {', '.join(MODELS)})")
    return MODELS[name](n_features, n_classes)
