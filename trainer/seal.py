"""Seal a trained model's directory into a release that standard tools check (docs/release.md).

    seal(MODEL_DIR, certificate=CERT.json, key=PRIVATE_EC.pem, card=True)

writes into MODEL_DIR
  * certificate.json   the certificate (a byte copy; the training record must name it),
  * release.dsse.json  the training manifest as an in-toto Statement in a DSSE envelope signed with the
                       ECDSA release key: its subjects are the model files, its predicate the run
                       (scheme, M, E, sigma, N0, C, B0, sampler, divisor, steps done, empty steps, seed
                       commitment) with the data set's digest and the certificate's SHA-256 and claim,
  * README.md          with `card`: a Hugging Face model card whose metadata carries the claim,
  * model.sig          last: an OpenSSF model-signing 1.1 signature (key method, offline) over every file
                       of the directory, the four above included.
The training record MODEL_DIR/release.json (written by `sigmacert train` or trainer.release.write_release)
says how the model was trained; a record whose run is not the certificate's claim is refused.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat

from certifier.certificate.ecdsa import ec_key_id, sign_envelope_ec
from certifier.certificate.envelope import STATEMENT_TYPE, canonical_json, load_envelope, read_unverified
from certifier.certificate.keys import load_release_private
from certifier.errors import ParameterError, RefusedError
from trainer.card import model_card
from trainer.release import CERT_FILE, MANIFEST_FILE, SIGNED_FILE, sha256_bytes

TRAINING_PREDICATE_TYPE = "https://sigmacert.dev/training/v1"
CARD_FILE = "README.md"
SIGNATURE_FILE = "model.sig"
RELEASE_FILES = (CERT_FILE, MANIFEST_FILE, SIGNED_FILE, CARD_FILE, SIGNATURE_FILE)
GIT_PATHS = (".git", ".gitattributes", ".gitignore", ".github")   # model-signing ignores these by default
RUN_KEYS = ("scheme", "steps", "epochs", "sigma", "stages")


class SealError(RefusedError):
    """A release that must not be sealed (its record and certificate disagree), one line."""


def model_files(model_dir: str) -> list[str]:
    """The model's files: every regular file under MODEL_DIR but the release's own and git's, as sorted
    '/'-separated relative paths; a symbolic link or special file is refused (model-signing refuses them)."""
    out = []
    for root, dirs, files in os.walk(model_dir):
        rel_root = os.path.relpath(root, model_dir)
        dirs[:] = sorted(d for d in dirs if not (rel_root == "." and d in GIT_PATHS))
        for name in files:
            rel = name if rel_root == "." else f"{rel_root}/{name}".replace(os.sep, "/")
            if rel in RELEASE_FILES or rel in GIT_PATHS or rel.endswith(".tmp"):
                continue
            if not stat.S_ISREG(os.lstat(os.path.join(root, name)).st_mode):
                raise ParameterError(f"{rel} in {model_dir} is not a regular file; a release holds regular files only")
            out.append(rel)
    for d in dirs:
        if os.path.islink(os.path.join(model_dir, d)):
            raise ParameterError(f"{d} in {model_dir} is a symbolic link; a release holds regular files only")
    return sorted(out)


def claim_run(claim: dict) -> dict:
    """The run a claim certifies: scheme, M, E, sigma (as written), stages when it has them."""
    scheme = claim.get("scheme") or str(claim.get("mechanism", "")).removeprefix("dp-sgd/")
    return {k: v for k, v in (("scheme", scheme), ("steps", claim.get("steps")), ("epochs", claim.get("epochs")),
                              ("sigma", claim.get("sigma")), ("stages", claim.get("stages"))) if v is not None}


def run_differences(run: dict, claim: dict) -> list[str]:
    """Where a training run is not the certificate's claim (empty: it is), and steps done != the run's."""
    want = claim_run(claim)
    diffs = [f"{k}: trained {run.get(k)!r}, certified {want.get(k)!r}" for k in RUN_KEYS if run.get(k) != want.get(k)]
    stages = want.get("stages") or [{"steps": want.get("steps"), "epochs": want.get("epochs")}]
    try:
        total = sum(int(s["steps"]) * int(s["epochs"]) for s in stages)
    except (TypeError, KeyError, ValueError):
        total = None
    if run.get("steps_done") != total:
        diffs.append(f"steps done: {run.get('steps_done')!r}, the certified run has {total!r}")
    return diffs


def sha256_file(path: str) -> str:
    """SHA-256 of a file, read in 1 MiB blocks (a model may be larger than memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read(path: str, limit: int = 64 << 20) -> bytes:
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ParameterError(f"{path} is larger than {limit} bytes")
    return data


def _write(path: str, data: bytes) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def training_statement(model_dir: str, record: dict, cert_bytes: bytes, claim: dict) -> dict:
    """The in-toto Statement of the training manifest: subjects = the model files."""
    files = model_files(model_dir)
    if not files:
        raise ParameterError(f"{model_dir} holds no model file")
    subjects = [{"name": rel, "digest": {"sha256": sha256_file(os.path.join(model_dir, rel))}} for rel in files]
    training = record.get("training", {})
    predicate = {"format": "sigmacert-training/v1", "run": training.get("run"),
                 "certificate": {"file": CERT_FILE, "sha256": sha256_bytes(cert_bytes), "claim": claim,
                                 "keyid": _cert_keyid(cert_bytes)},
                 "training": {k: v for k, v in training.items() if k != "run"},
                 "dataset": record.get("dataset"), "model": record.get("model"),
                 "test_accuracy": record.get("test_accuracy")}
    return {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": TRAINING_PREDICATE_TYPE,
            "predicate": predicate}


def _cert_keyid(cert_bytes: bytes) -> str:
    """The key id the certificate's signature names (the issuer; verified by sigmacert-verify, not here)."""
    return load_envelope(cert_bytes)["signatures"][0]["keyid"]


def model_sign(model_dir: str, private_key_path: str) -> None:
    """OpenSSF model signing 1.1, key method: MODEL_DIR/model.sig over every file of MODEL_DIR."""
    try:
        import model_signing
    except ImportError as err:
        raise ParameterError(f"signing a release needs model-signing: pip install 'sigmacert[release]' ({err})") \
            from None
    hashing = model_signing.hashing.Config().set_ignored_paths(paths=[SIGNATURE_FILE], ignore_git_paths=True)
    (model_signing.signing.Config().use_elliptic_key_signer(private_key=private_key_path)
     .set_hashing_config(hashing).sign(model_dir, os.path.join(model_dir, SIGNATURE_FILE)))


def seal(model_dir: str, *, certificate: str, key: str, card: bool = False) -> dict:
    """Write certificate, signed training manifest, card (optional) and model-signing signature into
    `model_dir`; returns what was written (paths, subjects, key ids)."""
    if not os.path.isdir(model_dir):
        raise ParameterError(f"no such model directory: {model_dir}")
    private = load_release_private(key)
    record_path = os.path.join(model_dir, MANIFEST_FILE)
    try:
        record = json.loads(_read(record_path))
    except FileNotFoundError:
        raise ParameterError(f"{record_path} is missing: the training record `sigmacert train` writes "
                             "(docs/release.md says what it holds)") from None
    except (ValueError, UnicodeDecodeError):
        raise ParameterError(f"{record_path} is not JSON") from None
    cert_bytes = _read(certificate, 4 << 20)
    try:
        claim = read_unverified(load_envelope(cert_bytes))["predicate"]["claim"]
    except (RefusedError, ParameterError, KeyError, TypeError, ValueError) as err:
        raise ParameterError(f"{certificate} is not a sigmacert certificate ({err})") from None
    if not isinstance(record, dict) or not isinstance(record.get("training", {}).get("run"), dict):
        raise ParameterError(f"{record_path} has no training run (training.run): not a sigmacert-release/v2 record")
    named = record.get("certificate", {}).get("sha256")
    if named is not None and named != sha256_bytes(cert_bytes):
        raise SealError(f"the training record names certificate sha256 {named[:16]}..., not {certificate}")
    diffs = run_differences(record["training"]["run"], claim)
    if diffs:
        raise SealError("the training run is not the certificate's claim: " + "; ".join(diffs))
    _write(os.path.join(model_dir, CERT_FILE), cert_bytes)
    stmt = training_statement(model_dir, record, cert_bytes, claim)
    env = sign_envelope_ec(stmt, private)
    _write(os.path.join(model_dir, SIGNED_FILE), (json.dumps(env, indent=2) + "\n").encode("utf-8"))
    if card:
        _write(os.path.join(model_dir, CARD_FILE), model_card(stmt["predicate"], claim).encode("utf-8"))
    model_sign(model_dir, key)
    return {"directory": os.path.abspath(model_dir), "release_keyid": ec_key_id(private.public_key()),
            "subjects": stmt["subject"], "certificate_sha256": sha256_bytes(cert_bytes),
            "certificate_keyid": stmt["predicate"]["certificate"]["keyid"], "run": record["training"]["run"],
            "files": sorted(model_files(model_dir) + [f for f in RELEASE_FILES if f != SIGNATURE_FILE
                                                      and os.path.exists(os.path.join(model_dir, f))]),
            "manifest_sha256": sha256_bytes(canonical_json(stmt))}
