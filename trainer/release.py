"""Train from a verified certificate and write the release: model, certificate copy, release.json.

The certificate is checked with the independent `verifier` package first; sigma, M and E come from
its claim and nowhere else.  With a signing key the manifest is also written as an in-toto
Statement in a DSSE envelope (certifier.certificate.envelope) whose subject is the model file.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import os

import numpy as np

from certifier.certificate.envelope import STATEMENT_TYPE, canonical_json, file_subject, sign_envelope
from certifier.certificate.keys import load_private
from certifier.errors import ParameterError, RefusedError
from certifier.numerics.schemes import RANDOM_ALLOCATION
from trainer import algorithm, data, models
from trainer.certificates import sigma_float, verified_run

MANIFEST_FORMAT = "sigmacert-release/v2"     # v2: run, scheme, sampler, divisor, seed commitment, data digest
RELEASE_PREDICATE_TYPE = "https://sigmacert.dev/release/v1"
MODEL_FILE = "model.npy"
CERT_FILE = "certificate.json"
MANIFEST_FILE = "release.json"
SIGNED_FILE = "release.dsse.json"
SAMPLER = "trainer.allocation: a uniformly random order, then each record to one of M steps, fresh every epoch"


class ReleaseError(RefusedError):
    """A refusal to train, with a one-line reason (bad inputs are ParameterError)."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def dataset_digest(X, y) -> str:
    """SHA-256 of the training split as little-endian float64 features then int64 labels (.npy bytes)."""
    h = hashlib.sha256()
    for a, dt in ((X, "<f8"), (y, "<i8")):
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(np.asarray(a).astype(dt)), allow_pickle=False)
        h.update(buf.getvalue())
    return h.hexdigest()


def seed_commitment(seed: int | None) -> tuple[dict, dict | None]:
    """(commitment, opening) of the training seed: SHA-256 of the canonical JSON {"salt", "seed"} with a
    fresh 256-bit salt. The seed fixes the allocation, which the guarantee needs secret, so the release
    carries only the commitment; the opening is kept apart (mode 0600). A seed None (drawn by the sampler,
    never seen) has no commitment."""
    if seed is None:
        return {"scheme": "none", "note": "a secret seed drawn by the sampler and not recorded"}, None
    opening = {"salt": os.urandom(32).hex(), "seed": int(seed)}
    return {"scheme": "sha256(canonical-json{salt,seed})", "sha256": sha256_bytes(canonical_json(opening))}, opening


def write_seed_opening(path: str, opening: dict) -> None:
    """The seed's opening, mode 0600 (written aside, then renamed over an older one)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(opening, sort_keys=True) + "\n")
    os.replace(tmp, path)


def run_record(claim: dict, *, scheme: str, sampler: str, n0: int, b0: float, updates: int, empty_steps: int,
               commitment: dict) -> dict:
    """The run a training record states (M, E, sigma, scheme as the claim writes them) and how it ran."""
    return {"scheme": scheme, "steps": int(claim["steps"]), "epochs": int(claim["epochs"]),
            "sigma": str(claim["sigma"]), "sampler": sampler, "divisor": f"B0 = N0/M = {b0!r}",
            "n0": n0, "b0": b0, "steps_done": updates, "empty_steps": empty_steps, "seed_commitment": commitment}


def verified_claim(cert_path: str, public_key_path: str) -> dict:
    """Verify the certificate (random allocation, Algorithm 1); its claim, or CertificateRefusedError
    (a refusal) / ParameterError (an unreadable file)."""
    run = verified_run(cert_path, public_key_path, scheme=RANDOM_ALLOCATION)
    return dict(run.claim, keyid=run.keyid)


def _write(path: str, data: bytes) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def train_release(*, certificate: str, public_key: str, dataset: str, outdir: str, clip_norm: float = 1.0,
                  n0: int | None = None, seed: int = 0, model_name: str = "logreg", lr: float = 0.5,
                  sign_key: str | None = None, seed_opening: str | None = None) -> dict:
    """Verify, train with Algorithm 1, write the release; returns the manifest. The seed's opening
    goes to `seed_opening` (default OUTDIR.seed-opening.json, beside the release, never inside it)."""
    # every argument is checked before the verifier's replay, which can take a while
    try:
        ds = data.load(dataset)
    except ValueError as err:
        raise ParameterError(str(err)) from None
    n_train = len(ds.X_train)
    if n0 is None:
        n0 = n_train
    if n0 < 1:
        raise ParameterError("N0 must be a positive integer")
    if n_train > n0:
        raise ReleaseError(f"dataset {dataset!r} has {n_train} training records, more than N0 = {n0}; "
                           "refusing to train")
    if not (clip_norm > 0 and math.isfinite(clip_norm)):
        raise ParameterError("clip norm C must be a positive number")
    if model_name == "gn-cnn":
        try:
            from trainer import torch_backend as tb
        except ImportError as err:
            raise ParameterError(str(err)) from None
    elif model_name not in models.MODELS:
        raise ParameterError(f"unknown model {model_name!r} (available: {', '.join(models.MODELS)}, gn-cnn)")
    signer = None
    if sign_key is not None:
        signer = load_private(sign_key)   # fail before training, not after
    claim = verified_claim(certificate, public_key)
    with open(certificate, "rb") as f:
        cert_bytes = f.read()
    steps, epochs, sigma_text = int(claim["steps"]), int(claim["epochs"]), str(claim["sigma"])
    sigma = sigma_float(sigma_text)
    if model_name == "gn-cnn":
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

    commitment, opening = seed_commitment(seed)
    training = {"algorithm": "Algorithm 1 (DP-SGD, random allocation)", "steps": steps,
                "epochs": epochs, "sigma": sigma_text, "sigma_float": repr(sigma), "n0": n0,
                "clip": clip_norm, "b0": res.b0, "optimizer": "sgd", "lr": lr,
                "updates": res.updates, "empty_steps": res.empty_steps,
                "run": run_record(claim, scheme="random-allocation", sampler=SAMPLER, n0=n0, b0=res.b0,
                                  updates=res.updates, empty_steps=res.empty_steps, commitment=commitment)}
    opening_path = seed_opening or os.path.abspath(outdir).rstrip(os.sep) + ".seed-opening.json"
    os.makedirs(os.path.dirname(opening_path) or ".", exist_ok=True)
    write_seed_opening(opening_path, opening)
    model_info = {"architecture": model_name, "parameters": int(model.size), "features": ds.n_features,
                  "classes": ds.n_classes}
    dataset_info = {"name": dataset, "size": n_train, "test_size": len(ds.X_test),
                    "sha256": dataset_digest(ds.X_train, ds.y_train)}
    return write_release(outdir, theta=res.theta, cert_bytes=cert_bytes, claim=claim, model=model_info,
                         training=training, dataset=dataset_info, test_accuracy=acc, signer=signer)


def write_release(outdir: str, *, theta, cert_bytes: bytes, claim: dict, model: dict, training: dict,
                  dataset: dict, test_accuracy: float, signer=None) -> dict:
    """Write model.npy (theta as little-endian float64), certificate.json (a byte copy) and
    release.json; with `signer` (an Ed25519 private key) also release.dsse.json. Returns the manifest.

    `claim` is the verified claim with its `keyid`."""
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
        stmt = {"_type": STATEMENT_TYPE, "subject": [file_subject(MODEL_FILE, model_bytes)],
                "predicateType": RELEASE_PREDICATE_TYPE, "predicate": manifest}
        env = sign_envelope(stmt, signer)
        _write(os.path.join(outdir, SIGNED_FILE), (json.dumps(env, indent=2) + "\n").encode("utf-8"))
        manifest = dict(manifest, signed_manifest=SIGNED_FILE)
    return manifest
