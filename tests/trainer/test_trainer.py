"""Trainer: the random-allocation sampler, Algorithm 1, models, and `sigmacert train`."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from trainer import algorithm
from trainer.algorithm import clip, train
from trainer.allocation import Allocation, allocate_epoch, random_order, step_members
from trainer.models import MLP, LogisticRegression

# ----------------------------------------------------------------------------- sampler


def test_each_record_in_exactly_one_step_per_epoch():
    rng = np.random.default_rng(1)
    alloc = Allocation(37, 9, 6, rng)
    assert sorted(alloc.order) == list(range(37))
    n_epochs = 0
    for members in alloc.epochs_iter():
        n_epochs += 1
        assert len(members) == 9
        allpos = np.concatenate(members)
        assert sorted(allpos.tolist()) == list(range(37))  # a partition of all N0 records
    assert n_epochs == 6


def test_step_members_partition_matches_assignment():
    a = np.array([2, 0, 2, 4, 0])
    parts = step_members(a, 6)
    assert [p.tolist() for p in parts] == [[1, 4], [], [0, 2], [], [3], []]


def test_step_sizes_are_binomial_chi_square():
    n0, m, reps = 24, 6, 20000
    rng = np.random.default_rng(2024)
    a = allocate_epoch(n0, m, rng, size=reps)                 # reps independent epochs
    sizes = np.stack([np.bincount(row, minlength=m) for row in a])  # (reps, m)
    assert (sizes.sum(axis=1) == n0).all()
    x = sizes[:, 0]
    # moments
    p = 1 / m
    assert abs(x.mean() - n0 * p) < 4 * np.sqrt(n0 * p * (1 - p) / reps)
    assert abs(x.var() / (n0 * p * (1 - p)) - 1) < 0.05
    # chi-square goodness of fit against Binomial(N0, 1/M), tail bins pooled
    pmf = stats.binom.pmf(np.arange(n0 + 1), n0, p)
    edges = [0, 1, 2, 3, 4, 5, 6, 7, 8, n0 + 1]
    obs = np.array([((x >= lo) & (x < hi)).sum() for lo, hi in zip(edges[:-1], edges[1:])])
    exp = np.array([pmf[lo:hi].sum() for lo, hi in zip(edges[:-1], edges[1:])]) * reps
    chi2 = ((obs - exp) ** 2 / exp).sum()
    assert stats.chi2.sf(chi2, len(obs) - 1) > 1e-3
    # the test has power: a fixed-size (shuffle) batching fails it
    fixed = np.full(reps, n0 // m)
    obs_f = np.array([((fixed >= lo) & (fixed < hi)).sum() for lo, hi in zip(edges[:-1], edges[1:])])
    assert stats.chi2.sf(((obs_f - exp) ** 2 / exp).sum(), len(obs) - 1) < 1e-6


def test_allocations_independent_across_epochs():
    n0, m, epochs = 5, 4, 40000
    rng = np.random.default_rng(7)
    alloc = Allocation(n0, m, epochs, rng)
    steps_of_record0 = []
    for members in alloc.epochs_iter():
        steps_of_record0.append(next(s for s, mem in enumerate(members) if 0 in mem))
    s = np.array(steps_of_record0)
    table = np.zeros((m, m))
    np.add.at(table, (s[:-1], s[1:]), 1)
    chi2, pval, _, _ = stats.chi2_contingency(table)
    assert pval > 1e-3
    # uniform over steps
    assert stats.chisquare(np.bincount(s, minlength=m)).pvalue > 1e-3


def test_random_order_is_uniform():
    rng = np.random.default_rng(3)
    first = np.array([random_order(4, rng)[0] for _ in range(8000)])
    assert stats.chisquare(np.bincount(first, minlength=4)).pvalue > 1e-3


# ----------------------------------------------------------------------------- Algorithm 1


def test_clip():
    v = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    c = clip(v, 1.0)
    assert np.allclose(c[0], [0.6, 0.8])          # norm 5 -> 1, same direction
    assert np.allclose(c[1], [0.3, 0.4])          # below C: unchanged
    assert np.allclose(c[2], [0.0, 0.0])
    assert np.allclose(np.linalg.norm(clip(np.random.default_rng(0).normal(size=(50, 7)) * 10, 2.5), axis=1), 2.5)


class _ConstGrad:
    """A model whose per-record gradient is the record itself (independent of theta)."""

    def __init__(self, d):
        self.size = d

    def init(self, rng):
        return np.zeros(self.size)

    def per_example_grads(self, theta, X, y):
        return X.copy()


class _Counter:
    def __init__(self, lr):
        self.calls, self.lr = 0, lr

    def __call__(self, theta, S):
        self.calls += 1
        return theta - self.lr * S


def test_exactly_E_times_M_updates_including_empty_steps():
    X = np.ones((3, 2))
    opt = _Counter(1.0)
    r = train(_ConstGrad(2), X, np.zeros(3), n0=8, steps=50, epochs=7, sigma=1.0, clip_norm=1.0,
              optimizer=opt, seed=5)
    assert opt.calls == 350 and r.updates == 350
    assert r.empty_steps >= 350 - 7 * 3          # at most 3 genuine records per epoch
    assert r.empty_steps > 0
    # no genuine record at all: still E*M noisy updates
    opt = _Counter(1.0)
    r = train(_ConstGrad(2), np.zeros((0, 2)), np.zeros(0), n0=4, steps=3, epochs=2, sigma=1.0,
              clip_norm=1.0, optimizer=opt)
    assert opt.calls == 6 and r.empty_steps == 6 and np.any(r.theta != 0)


def test_signal_is_clipped_sum_over_B0_each_epoch():
    # sigma tiny: theta_final = -lr * E * sum_i clip_C(g_i) / B0 (each record once per epoch)
    X = np.array([[3.0, 4.0], [0.1, 0.0], [0.0, -2.0]])
    n0, m, e, C, lr = 10, 5, 3, 1.0, 0.7
    r = train(_ConstGrad(2), X, np.zeros(3), n0=n0, steps=m, epochs=e, sigma=1e-12, clip_norm=C, lr=lr, seed=9)
    want = -lr * e * clip(X, C).sum(axis=0) / (n0 / m)
    assert np.allclose(r.theta, want, atol=1e-9)
    assert r.b0 == 2.0


def test_noise_scale_sigma_C_over_B0():
    # only ghosts: theta = -lr * sum_k sigma*C*Z_k / B0, so Var = lr^2 sigma^2 C^2 E M / B0^2
    d, n0, m, e, sigma, C, lr = 20000, 6, 3, 2, 1.5, 2.0, 1.0
    r = train(_ConstGrad(d), np.zeros((0, d)), np.zeros(0), n0=n0, steps=m, epochs=e, sigma=sigma,
              clip_norm=C, lr=lr, seed=11)
    want = lr ** 2 * sigma ** 2 * C ** 2 * e * m / (n0 / m) ** 2
    assert abs(r.theta.var() / want - 1) < 0.05
    assert abs(r.theta.mean()) < 4 * np.sqrt(want / d)


def test_dataset_larger_than_n0_refused():
    with pytest.raises(ValueError, match="more than N0"):
        train(_ConstGrad(2), np.ones((5, 2)), np.zeros(5), n0=4, steps=2, epochs=1, sigma=1.0, clip_norm=1.0)


def test_same_seed_same_model_and_streams_independent():
    X = np.random.default_rng(0).normal(size=(20, 3))
    a = train(_ConstGrad(3), X, np.zeros(20), n0=20, steps=4, epochs=2, sigma=1.0, clip_norm=1.0, seed=3)
    b = train(_ConstGrad(3), X, np.zeros(20), n0=20, steps=4, epochs=2, sigma=1.0, clip_norm=1.0, seed=3)
    c = train(_ConstGrad(3), X, np.zeros(20), n0=20, steps=4, epochs=2, sigma=1.0, clip_norm=1.0, seed=4)
    assert np.array_equal(a.theta, b.theta) and not np.array_equal(a.theta, c.theta)


@pytest.mark.parametrize("model", [LogisticRegression(5, 3), MLP(5, 3, hidden=4)])
def test_per_example_grads_match_finite_differences(model):
    rng = np.random.default_rng(0)
    theta = model.init(rng) + 0.1 * rng.normal(size=model.size)
    X = rng.normal(size=(4, 5))
    y = np.array([0, 2, 1, 2])
    G = model.per_example_grads(theta, X, y)
    assert G.shape == (4, model.size)
    eps = 1e-6
    for j in rng.choice(model.size, 12, replace=False):
        e = np.zeros(model.size)
        e[j] = eps
        fd = (model.loss(theta + e, X, y) - model.loss(theta - e, X, y)) / (2 * eps)
        assert np.allclose(G[:, j], fd, atol=1e-6)


def test_digits_logreg_learns():
    from trainer import data, models
    ds = data.load("digits")
    assert len(ds.X_train) + len(ds.X_test) == 1797
    m = models.make_model("logreg", ds.n_features, ds.n_classes)
    r = train(m, ds.X_train, ds.y_train, n0=1500, steps=8, epochs=3, sigma=1.0, clip_norm=1.0, lr=0.5, seed=0)
    assert algorithm.accuracy(m, r.theta, ds.X_test, ds.y_test) > 0.6


# ----------------------------------------------------------------------------- sigmacert train

def _cli(*args, cwd=None):
    exe = os.path.join(os.path.dirname(sys.executable), "sigmacert")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    d = tmp_path_factory.mktemp("cert")
    r = _cli("keygen", "-o", str(d / "keys"))
    assert r.returncode == 0, r.stderr
    r = _cli("certify", "--steps", "12", "--epochs", "3", "--target", "0.3", "--sigma", "1.5",
             "--key", str(d / "keys" / "private.pem"), "-o", str(d / "cert.json"), "--quiet")
    assert r.returncode == 0, r.stderr
    r = _cli("keygen", "-o", str(d / "other"))
    assert r.returncode == 0, r.stderr
    return d


def _sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_train_on_digits_writes_release(cert, tmp_path):
    out = tmp_path / "out"
    r = _cli("train", "--certificate", str(cert / "cert.json"), "--key", str(cert / "keys" / "public.pem"),
             "--dataset", "digits", "--seed", "3", "--sign-key", str(cert / "keys" / "private.pem"),
             "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    man = json.loads(r.stdout)
    assert sorted(os.listdir(out)) == ["certificate.json", "model.npy", "release.dsse.json", "release.json"]
    disk = json.loads((out / "release.json").read_text())
    assert disk["model"]["sha256"] == _sha(out / "model.npy") == man["model"]["sha256"]
    assert disk["certificate"]["sha256"] == _sha(out / "certificate.json") == _sha(cert / "cert.json")
    claim = disk["certificate"]["claim"]
    t = disk["training"]
    assert (claim["steps"], claim["epochs"], claim["sigma"]) == (12, 3, "1.5")
    assert (t["steps"], t["epochs"], t["sigma"], t["updates"]) == (12, 3, "1.5", 36)
    assert t["n0"] == disk["dataset"]["size"] == 1438 and t["b0"] == 1438 / 12 and "seed" not in t
    assert t["run"]["seed_commitment"]["sha256"]
    assert json.loads((tmp_path / "out.seed-opening.json").read_text())["seed"] == 3
    assert disk["dataset"]["name"] == "digits" and 0.5 < disk["test_accuracy"] <= 1.0
    theta = np.load(out / "model.npy")
    assert theta.shape == (64 * 10 + 10,)
    # signed manifest: DSSE over an in-toto Statement whose subject is the model file
    from certifier.certificate.envelope import load_envelope, verify_envelope
    from certifier.certificate.keys import load_public
    env = load_envelope((out / "release.dsse.json").read_bytes())
    stmt = verify_envelope(env, load_public(str(cert / "keys" / "public.pem")))
    assert stmt["subject"] == [{"name": "model.npy", "digest": {"sha256": _sha(out / "model.npy")}}]
    assert stmt["predicate"]["certificate"]["sha256"] == disk["certificate"]["sha256"]


def _tampered(cert, tmp_path):
    env = json.loads((cert / "cert.json").read_text())
    stmt = json.loads(base64.b64decode(env["payload"]))
    stmt["predicate"]["claim"]["sigma"] = "0.9"       # claim a smaller sigma, keep the signature
    env["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    p = tmp_path / "tampered.json"
    p.write_text(json.dumps(env))
    return p


@pytest.mark.parametrize("case", ["tampered", "wrong-key"])
def test_rejected_certificate_stops_training(cert, tmp_path, case):
    path = _tampered(cert, tmp_path) if case == "tampered" else cert / "cert.json"
    key = cert / ("other" if case == "wrong-key" else "keys") / "public.pem"
    out = tmp_path / "out"
    r = _cli("train", "--certificate", str(path), "--key", str(key), "--dataset", "digits", "-o", str(out))
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "certificate rejected" in lines[0] and "refusing to train" in lines[0]
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert not out.exists()


def test_train_refuses_dataset_larger_than_n0(cert, tmp_path):
    out = tmp_path / "out"
    r = _cli("train", "--certificate", str(cert / "cert.json"), "--key", str(cert / "keys" / "public.pem"),
             "--dataset", "digits", "--n0", "1000", "-o", str(out))
    assert r.returncode == 1
    assert "more than N0 = 1000" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_train_bad_inputs_one_line(cert, tmp_path):
    base = ["train", "--certificate", str(cert / "cert.json"), "--key", str(cert / "keys" / "public.pem"),
            "-o", str(tmp_path / "o")]
    for extra in (["--dataset", "mnist"], ["--dataset", "digits", "--clip", "-1"],
                  ["--dataset", "digits", "--n0", "x"]):
        r = _cli(*base, *extra)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    r = _cli("train", "--certificate", str(tmp_path / "missing.json"), "--key",
             str(cert / "keys" / "public.pem"), "--dataset", "digits", "-o", str(tmp_path / "o"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_train_with_committed_certificate(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cert = os.path.join(root, "artifacts", "certificates", "M100_E10.json")
    key = os.path.join(root, "artifacts", "keys", "public.pem")
    assert os.path.exists(cert) and os.path.exists(key), "the committed Table 4 certificates are missing"
    r = _cli("train", "--certificate", cert, "--key", key, "--dataset", "digits", "-o", str(tmp_path / "o"), "--json")
    assert r.returncode == 0, r.stderr
    man = json.loads(r.stdout)
    assert man["training"]["updates"] == 1000 and man["certificate"]["claim"]["steps"] == 100
    assert man["certificate"]["sha256"] == _sha(cert) and man["test_accuracy"] > 0.6
