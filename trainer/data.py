"""Data sets that ship inside an installed package (no network): scikit-learn's digits."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from certifier.errors import ParameterError

DATASETS = ("digits",)


@dataclass
class Dataset:
    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int

    @property
    def n_features(self) -> int:
        return self.X_train.shape[1]


def load(name: str, test_fraction: float = 0.2, split_seed: int = 0) -> Dataset:
    """Load `name` offline.  The train/test split uses its own fixed seed (public, data-independent
    of the training randomness).  Features are scaled to [0, 1]."""
    if name != "digits":
        raise ParameterError(f"unknown dataset {name!r} (available: {', '.join(DATASETS)})")
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise ParameterError("dataset 'digits' needs scikit-learn: pip install 'sigmacert[train]'") from None
    d = load_digits()  # bundled with scikit-learn; never downloads
    X = np.asarray(d.data, dtype=np.float64) / 16.0
    y = np.asarray(d.target, dtype=np.int64)
    perm = np.random.default_rng(split_seed).permutation(len(X))
    n_test = int(round(test_fraction * len(X)))
    te, tr = perm[:n_test], perm[n_test:]
    return Dataset(name, X[tr], y[tr], X[te], y[te], int(y.max()) + 1)
