"""Train from a verified certificate and write the release: model, certificate copy, release.json.

The certificate is checked with the independent `verifier` package first; sigma, M and E come from
its claim and nowhere else.  With a signing key the manifest is also written as an in-toto
Statement in a DSSE envelope (certifier.certificate.envelope) whose subject is the model file.
"""
from __future__ import annotations

import hashlib
import json
import math
import os

import numpy as np

from trainer.certificates import sigma_float

MANIFEST_FORMAT = "sigmacert-release/v1"
RELEASE_PREDICATE_TYPE = "https://sigmacert.dev/release/v1"
MODEL_FILE = "model.npy"
CERT_FILE = "certificate.json"
MANIFEST_FILE = "release.json"
SIGNED_FILE = "release.dsse.json"


class ReleaseError(Exception):
    """A refusal to train, with a one-line reason and an exit code."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verified_claim(cert_path: str, public_key_path: str) -> dict:
    """Verify the certificate (random allocation, Algorithm 1); its claim, or ReleaseError (exit 1)."""
    from certifier.errors import ParameterError
    from certifier.numerics.schemes import RANDOM_ALLOCATION
    from trainer.certificates import CertificateRefused, verified_run
    try:
        run = verified_run(cert_path, public_key_path, scheme=RANDOM_ALLOCATION)
    except ParameterError as err:
        raise ReleaseError(str(err), 2) from None
    except CertificateRefused as err:
        raise ReleaseError(str(err), 1) from None
    return dict(run.claim, keyid=run.keyid)


def _write(path: str, data: bytes) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def train_release(*, certificate: str, public_key: str, dataset: str, outdir: str, clip_norm: float = 1.0,
                  n0: int | None = None, seed: int = 0, model_name: str = "logreg", lr: float = 0.5,
                  sign_key: str | None = None) -> dict:
    """Verify, train with Algorithm 1, write the release; returns the manifest."""
    from trainer import algorithm, data, models
    claim = verified_claim(certificate, public_key)
    with open(certificate, "rb") as f:
        cert_bytes = f.read()
    steps, epochs, sigma_text = int(claim["steps"]), int(claim["epochs"]), str(claim["sigma"])
    sigma = sigma_float(sigma_text)
    try:
        ds = data.load(dataset)
    except ValueError as err:
        raise ReleaseError(str(err), 2) from None
    n_train = len(ds.X_train)
    if n0 is None:
        n0 = n_train
    if n0 < 1:
        raise ReleaseError("N0 must be a positive integer", 2)
    if n_train > n0:
        raise ReleaseError(f"dataset {dataset!r} has {n_train} training records, more than N0 = {n0}; "
                           "refusing to train", 1)
    if not (clip_norm > 0 and math.isfinite(clip_norm)):
        raise ReleaseError("clip norm C must be a positive number", 2)
    signer = None
    if sign_key is not None:
        from certifier.certificate.keys import load_private
        signer = load_private(sign_key)   # fail before training, not after
    if model_name == "gn-cnn":
        try:
            from trainer import torch_backend as tb
        except ImportError as err:
            raise ReleaseError(str(err), 2) from None
        model = tb.GroupNormCNN(ds.n_classes)
        model.size = sum(p.numel() for p in model.parameters())
        res = tb.train_torch(model, ds.X_train, ds.y_train, n0=n0, steps=steps, epochs=epochs, sigma=sigma,
                             clip_norm=clip_norm, lr=lr, seed=seed)
        acc = tb.accuracy(model, res.theta, ds.X_test, ds.y_test)
    else:
        model = models.make_model(model_name, ds.n_features, ds.n_classes)
        res = algorithm.train(model, ds.X_train, ds.y_train, n0=n0, steps=steps, epochs=epochs, sigma=sigma,
                              clip_norm=clip_norm, lr=lr, seed=seed)
        acc = algorithm.accuracy(model, res.theta, ds.X_test, ds.y_test)

    training = {"algorithm": "Algorithm 1 (DP-SGD, random allocation)", "steps": steps,
                "epochs": epochs, "sigma": sigma_text, "sigma_float": repr(sigma), "n0": n0,
                "clip": clip_norm, "b0": res.b0, "optimizer": "sgd", "lr": lr, "seed": seed,
                "updates": res.updates, "empty_steps": res.empty_steps}
    model_info = {"architecture": model_name, "parameters": int(model.size), "features": ds.n_features,
                  "classes": ds.n_classes}
    dataset_info = {"name": dataset, "size": n_train, "test_size": len(ds.X_test)}
    return write_release(outdir, theta=res.theta, cert_bytes=cert_bytes, claim=claim, model=model_info,
                         training=training, dataset=dataset_info, test_accuracy=acc, signer=signer)


def write_release(outdir: str, *, theta, cert_bytes: bytes, claim: dict, model: dict, training: dict,
                  dataset: dict, test_accuracy: float, signer=None) -> dict:
    """Write model.npy (theta as little-endian float64), certificate.json (a byte copy) and
    release.json; with `signer` (an Ed25519 private key) also release.dsse.json. Returns the manifest.

    `claim` is the verified claim with its `keyid`."""
    import io
    os.makedirs(outdir, exist_ok=True)
    buf = io.BytesIO()
    np.save(buf, np.asarray(theta).astype("<f8"), allow_pickle=False)
    model_bytes = buf.getvalue()
    _write(os.path.join(outdir, MODEL_FILE), model_bytes)
    _write(os.path.join(outdir, CERT_FILE), cert_bytes)
    manifest = {
        "format": MANIFEST_FORMAT,
        "model": {"file": MODEL_FILE, "sha256": sha256_bytes(model_bytes), **model},
        "certificate": {"file": CERT_FILE, "sha256": sha256_bytes(cert_bytes), "keyid": claim["keyid"],
                        "claim": {k: v for k, v in claim.items() if k != "keyid"}},
        "training": training,
        "dataset": dataset,
        "test_accuracy": test_accuracy,
    }
    _write(os.path.join(outdir, MANIFEST_FILE),
           (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    if signer is not None:
        from certifier.certificate.envelope import STATEMENT_TYPE, file_subject, sign_envelope
        stmt = {"_type": STATEMENT_TYPE, "subject": [file_subject(MODEL_FILE, model_bytes)],
                "predicateType": RELEASE_PREDICATE_TYPE, "predicate": manifest}
        env = sign_envelope(stmt, signer)
        _write(os.path.join(outdir, SIGNED_FILE), (json.dumps(env, indent=2) + "\n").encode("utf-8"))
        manifest = dict(manifest, signed_manifest=SIGNED_FILE)
    return manifest
