"""Certificates for the fixed-bins scheme, end to end: `certify --scheme fixed-bins`, `scheme=` in the API,
`sigmacert.jax.certify_for` / `noise_multiplier`, and the Opacus glue refusing such a certificate.

These run against certifier.certify.certify(..., scheme=, iterations=) and the verifier's replay of a
fixed-bins claim (the claim names its scheme; trainer.certificates.claim_scheme reads it)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from jax_privacy.batch_selection import BallsInBinsSampling
from torch.utils.data import TensorDataset

import sigmacert
import sigmacert.jax as sj
from certifier.certificate.keys import keygen
from certifier.numerics import schemes
from sigmacert.torch import CertificateRefusedError, make_private
from trainer.certificates import claim_scheme

M, T, SIGMA = 10, 35, "6"          # E = ceil(35/10) = 4; the one-epoch pair at sigma/2 = 3


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("fixed-bins")
    keygen(str(d / "keys"))
    return d


def test_cli_certify_fixed_bins_is_accepted_by_the_verifier(keys):
    out = keys / "cli.json"
    r = subprocess.run([sys.executable, "-m", "sigmacert.cli", "certify", "--scheme", "fixed-bins", "-M", str(M),
                        "--iterations", str(T), "-l", "0.1", "-s", SIGMA, "--one-sided", "--key",
                        str(keys / "keys" / "private.pem"), "-o", str(out), "--json", "--quiet"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["certified"] and summary["scheme"] == "fixed-bins" and summary["epochs"] == 4
    v = sigmacert.verify(str(out), keys / "keys" / "public.pem")
    assert v.accepted, (v.reason, v.detail)
    assert claim_scheme(dict(v.claim)) == "fixed-bins"


def test_api_certify_fixed_bins(keys):
    cert = sigmacert.certify(M, None, "0.1", SIGMA, scheme="fixed-bins", iterations=T,
                             key=keys / "keys" / "private.pem", two_sided=False)
    assert (cert.scheme, cert.steps, cert.epochs, cert.iterations) == ("fixed-bins", M, 4, T)
    assert claim_scheme(dict(cert.predicate["claim"])) == "fixed-bins"
    assert float(cert.bound) >= schemes.exact_tv(M, 4, float(SIGMA), "fixed-bins", check=False).tv - 1e-9
    assert sigmacert.verify(cert, keys / "keys" / "public.pem").accepted


def test_jax_certify_for_then_noise_multiplier(keys):
    strategy = BallsInBinsSampling(iterations=T, cycle_length=M)
    cert = sj.certify_for(strategy, "0.1", SIGMA, key=keys / "keys" / "private.pem", two_sided=False)
    path = keys / "jax.json"
    cert.write(str(path))
    assert sj.noise_multiplier(path, keys / "keys" / "public.pem", strategy) == float(SIGMA)
    # a run with more rounds per bin, or other bins, is not covered
    for other in (BallsInBinsSampling(iterations=41, cycle_length=M),
                  BallsInBinsSampling(iterations=T, cycle_length=5)):
        with pytest.raises(CertificateRefusedError, match="refusing"):
            sj.noise_multiplier(path, keys / "keys" / "public.pem", other)


def test_opacus_glue_refuses_a_fixed_bins_certificate(keys):
    cert = sigmacert.certify(M, 4, "0.1", SIGMA, scheme="fixed-bins", key=keys / "keys" / "private.pem",
                             two_sided=False)
    path = keys / "fb.json"
    cert.write(str(path))
    model = torch.nn.Linear(2, 1)
    with pytest.raises(CertificateRefusedError, match="fixed bins.*random allocation"):
        make_private(model, torch.optim.SGD(model.parameters(), lr=1.0), TensorDataset(torch.zeros(4, 2)),
                     certificate=path, public_key=keys / "keys" / "public.pem", clip_norm=1.0)
