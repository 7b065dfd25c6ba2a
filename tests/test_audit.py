"""Linear-model membership-inference audit (Section 5.3, Table 2)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np

from trainer.audit import audit, optimal_accuracy, simulate


def test_released_projection_is_gaussian_shift():
    # u = <w, x_hat> / (sigma C sqrt(EM)) is N(0,1) on D and N(mu,1) on D+, mu = sqrt(E/M)/sigma
    sigma, m, e, t = 0.8, 16, 8, 4000
    w, x_hat = simulate(sigma, m, e, t, clip_norm=2.0, seed=3)
    u = (w @ x_hat) / (sigma * 2.0 * math.sqrt(e * m))
    mu = math.sqrt(e / m) / sigma
    se = 1 / math.sqrt(t)
    assert abs(u[0].mean()) < 4 * se and abs(u[1].mean() - mu) < 4 * se
    assert abs(u[0].var() - 1) < 0.1 and abs(u[1].var() - 1) < 0.1
    assert np.allclose(u[1] - u[0], mu)          # shared randomness: only the target differs
    # the other 15 coordinates carry no signal: identical in both worlds
    assert np.allclose(w[0, :, 1:], w[1, :, 1:])


def test_table2_row_sigma_1561_300_trials():
    r = audit(1.561, 128, 125, 300, seed=0, with_pair=False)   # its time is a benchmark's business
    mu = math.sqrt(125 / 128) / 1.561
    assert r.optimal == optimal_accuracy(128, 125, 1.561) == 0.5 * (1 + math.erf(mu / 2 / math.sqrt(2)))
    assert abs(r.optimal - 0.6242) < 1e-4
    assert 0.005 < r.se < 0.02
    assert abs(r.measured - r.optimal) <= 3 * r.se
    from certifier.numerics.closed_form import tv_bound
    from certifier.numerics.exact import exact_tv
    pair = 0.5 + 0.5 * float(exact_tv(128, 125, 1.561).tv)
    bound = 0.5 + 0.5 * tv_bound(128, 125, 1.561)
    assert abs(pair - 0.6374) < 1e-4 and abs(bound - 0.70) < 1e-3
    assert r.optimal < pair < bound
    assert r.measured < pair and r.measured < bound


def test_zero_target_is_exactly_chance():
    r = audit(1.561, 128, 125, 40, zero_target=True, seed=2, with_pair=False)
    assert r.measured == 0.5 and r.se == 0.0 and r.optimal == 0.5


def test_audit_cli_json():
    exe = os.path.join(os.path.dirname(sys.executable), "sigmacert")
    r = subprocess.run([exe, "audit-linear", "--sigma", "1.0", "--steps", "8", "--epochs", "4",
                        "--trials", "200", "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    for k in ("measured", "se", "optimal", "pair", "bound"):
        assert isinstance(d[k], float)
    assert d["optimal"] < d["pair"] < d["bound"] < 1
    assert abs(d["measured"] - d["optimal"]) <= 4 * d["se"]
    r = subprocess.run([exe, "audit-linear", "--sigma", "-1", "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
