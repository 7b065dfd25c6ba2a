"""jax_privacy's own BallsInBinsSampling through sigmacert.jax (extra `jax`, installed by `make test`)."""
from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
from jax_privacy.batch_selection import BallsInBinsSampling, CyclicPoissonSampling

import sigmacert
import sigmacert.jax as sj
from certifier.certificate.keys import keygen
from certifier.numerics import exact


def test_reads_the_real_strategy():
    s = BallsInBinsSampling(iterations=25, cycle_length=10)
    r = sj.strategy_run(s)
    assert (r.scheme, r.steps, r.epochs, r.iterations) == ("fixed-bins", 10, 3, 25)
    assert sj.strategy_run(BallsInBinsSampling(iterations=30, cycle_length=10)).epochs == 3
    assert sj.strategy_run(BallsInBinsSampling(iterations=7, cycle_length=10)).epochs == 1


def test_the_strategy_is_the_fixed_bins_scheme():
    """What jax_privacy's iterator does is what the reduction assumes: every example in ONE bin, seen in
    every round of that bin, in no other round."""
    s = BallsInBinsSampling(iterations=25, cycle_length=10)
    batches = [np.asarray(b) for b in s.batch_iterator(200, rng=0)]
    assert len(batches) == 25
    seen = {}
    for i, b in enumerate(batches):
        for x in b.tolist():
            seen.setdefault(x, set()).add(i)
    assert set(seen) == set(range(200))
    for rounds in seen.values():
        j = min(rounds)
        assert rounds == set(range(j, 25, 10))


@pytest.mark.parametrize("bad", [CyclicPoissonSampling(sampling_prob=0.1, iterations=10), "fixed-bins", None])
def test_other_strategies_are_refused(bad):
    with pytest.raises(sigmacert.ParameterError, match="BallsInBinsSampling"):
        sj.strategy_run(bad)


@pytest.mark.parametrize("iterations,cycle", [(0, 10), (10, 0), (-5, 3)])
def test_degenerate_strategies_are_refused(iterations, cycle):
    with pytest.raises(sigmacert.ParameterError, match="positive integer"):
        sj.strategy_run(BallsInBinsSampling(iterations=iterations, cycle_length=cycle))


def test_sigma_for_is_the_fixed_bins_grid_answer():
    """M = 20 bins, 80 iterations (E = 4): the least grid sigma with TV(20, 1, sigma/2) <= 0.1."""
    s = BallsInBinsSampling(iterations=80, cycle_length=20)
    sigma = sj.sigma_for(s, "0.1")
    assert isinstance(sigma, Decimal) and sigma.as_tuple().exponent >= -6
    tv = lambda x: exact.exact_tv(20, 1, float(x) / 2, check=False).tv  # noqa: E731
    assert tv(sigma) <= 0.1 < tv(sigma - Decimal("0.000001"))
    closed = sj.closed_form_sigma_for(s, "0.1")
    assert closed == sigmacert.closed_form_sigma(20, 4, "0.1", scheme="fixed-bins") and closed > sigma


def test_noise_multiplier_refuses_a_random_allocation_certificate(tmp_path):
    keygen(str(tmp_path / "keys"))
    cert = sigmacert.certify(10, 3, "0.3", "2", key=tmp_path / "keys" / "private.pem", two_sided=False)
    cert.write(str(tmp_path / "c.json"))
    with pytest.raises(sj.CertificateRefusedError, match="random allocation.*fixed bins"):
        sj.noise_multiplier(tmp_path / "c.json", tmp_path / "keys" / "public.pem",
                            BallsInBinsSampling(iterations=30, cycle_length=10))
