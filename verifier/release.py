"""sigmacert-verify --release MODEL_DIR: a sealed release, every layer (docs/release.md).

ACCEPT iff all of these hold; every one that fails is listed with its reason code:
  model-signing      model.sig is an OpenSSF model-signing signature by a given ECDSA key over exactly the
                     files of MODEL_DIR (every file intact, nothing added or missing): checked by the
                     `model_signing` package itself (an optional import; without it this is a usage error)
  manifest-signature release.dsse.json is a DSSE envelope whose ECDSA signature over PAE verifies with a given
                     ECDSA key (verify-then-read), holding an in-toto Statement of the training predicate type
  manifest-subjects  its subjects are the model files, each with its SHA-256, and no model file is left out
  manifest-certificate  certificate.json has the SHA-256 the manifest names, and the manifest's claim is the
                     certificate's
  run-not-claim      the manifest's run is the certificate's claim: scheme, M, E, sigma (as written), stages,
                     and the steps done are the claim's E*M
  certificate        the certificate verifies (signature by a given Ed25519 key and the replay: verify_bytes)
  card               README.md, when present, states the certificate's sigma, M, E, SHA-256 and key id
This module imports no other project package; the model-signing format is checked by model_signing.
"""
from __future__ import annotations

import base64
import hashlib
import os
import re
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .format.envelope import pae
from .format.strict import Reject, load_json

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
TRAINING_PREDICATE_TYPE = "https://sigmacert.dev/training/v1"
CERT_FILE, RECORD_FILE, MANIFEST_FILE, CARD_FILE, SIGNATURE_FILE = (
    "certificate.json", "release.json", "release.dsse.json", "README.md", "model.sig")
RELEASE_FILES = (CERT_FILE, RECORD_FILE, MANIFEST_FILE, CARD_FILE, SIGNATURE_FILE)
GIT_PATHS = (".git", ".gitattributes", ".gitignore", ".github")
CURVE_HASH = {"secp256r1": hashes.SHA256, "secp384r1": hashes.SHA384, "secp521r1": hashes.SHA512}
MAX_FILE = 64 << 20


class MissingModelSigning(ValueError):
    """model_signing is not installed: a usage error (exit 2), not a verdict."""


@dataclass
class ReleaseResult:
    accepted: bool
    failures: list = field(default_factory=list)     # [{"reason", "detail"}]
    model_files: list = field(default_factory=list)  # [{"name", "sha256"}] checked against the manifest
    run: dict | None = None                          # the manifest's run
    claim: dict | None = None                        # the certificate's claim
    certificate: dict | None = None                  # the certificate's verdict (verifier.Result as a dict)
    release_keyid: str | None = None
    card: str | None = None                          # "checked", "absent" or why not checked

    def as_dict(self) -> dict:
        return {"result": "ACCEPT" if self.accepted else "REJECT", **self.__dict__}


def load_keys(pems: list[bytes]) -> tuple[list, list]:
    """(ECDSA keys on P-256/384/521, Ed25519 keys) from PEM public keys (ValueError for anything else)."""
    ecs, eds = [], []
    for pem in pems:
        if b"PRIVATE KEY-----" in pem:
            raise ValueError("this is a private key; verify with public keys")
        try:
            key = serialization.load_pem_public_key(pem)
        except (ValueError, TypeError):
            raise ValueError("not a PEM public key") from None
        if isinstance(key, Ed25519PublicKey):
            eds.append(key)
        elif isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name in CURVE_HASH:
            ecs.append(key)
        else:
            raise ValueError("neither an Ed25519 key (certificates) nor an ECDSA P-256/384/521 key (releases)")
    return ecs, eds


def ec_keyid(key: ec.EllipticCurvePublicKey) -> str:
    """SHA-256 of the DER SubjectPublicKeyInfo (docs/release.md)."""
    return hashlib.sha256(key.public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)).hexdigest()


def open_ec_envelope(data: bytes, keys: list) -> tuple[dict, str]:
    """(Statement, keyid) of a DSSE envelope signed with ECDSA by one of `keys`, verified before the
    payload is parsed; Reject otherwise."""
    env = load_json(data, "manifest")
    if not isinstance(env, dict) or set(env) != {"payloadType", "payload", "signatures"} \
            or not isinstance(env["signatures"], list) or not env["signatures"]:
        raise Reject("manifest-signature", "release.dsse.json is not a DSSE envelope "
                     "(payloadType, payload, signatures)")
    if env["payloadType"] != PAYLOAD_TYPE:
        raise Reject("manifest-signature", f"payloadType {env['payloadType']!r} != {PAYLOAD_TYPE!r}")
    try:
        body = base64.b64decode(env["payload"], validate=True)
        sigs = [(s["keyid"], base64.b64decode(s["sig"], validate=True)) for s in env["signatures"]]
    except (ValueError, TypeError, KeyError):
        raise Reject("manifest-signature", "malformed base64 or signature entry") from None
    trusted = {ec_keyid(k): k for k in keys}
    message = pae(PAYLOAD_TYPE, body)
    for kid, sig in sigs:
        key = trusted.get(kid)
        if key is None:
            continue
        try:
            key.verify(sig, message, ec.ECDSA(CURVE_HASH[key.curve.name]()))
        except InvalidSignature:
            raise Reject("manifest-signature", "the ECDSA signature over PAE(payloadType, payload) does not "
                         "verify: the manifest was changed after it was signed") from None
        stmt = load_json(body, "manifest")   # verify-then-read
        if not isinstance(stmt, dict) or stmt.get("_type") != STATEMENT_TYPE \
                or stmt.get("predicateType") != TRAINING_PREDICATE_TYPE:
            raise Reject("manifest-signature", "the payload is not an in-toto Statement of the training manifest")
        return stmt, kid
    raise Reject("manifest-signature", "no signature by a given ECDSA release key (manifest keyids: "
                 f"{', '.join(str(k) for k, _ in sigs)})")


def model_files(model_dir: str) -> list[str]:
    """Every regular file under MODEL_DIR but the release's own and git's, '/'-separated, sorted."""
    out = []
    for root, dirs, files in os.walk(model_dir):
        rel_root = os.path.relpath(root, model_dir)
        dirs[:] = sorted(d for d in dirs if not (rel_root == "." and d in GIT_PATHS))
        for name in files:
            rel = name if rel_root == "." else f"{rel_root}/{name}".replace(os.sep, "/")
            if rel not in RELEASE_FILES and rel not in GIT_PATHS:
                out.append(rel)
    return sorted(out)


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def claim_run(claim: dict) -> dict:
    scheme = claim.get("scheme") or str(claim.get("mechanism", "")).removeprefix("dp-sgd/")
    return {k: v for k, v in (("scheme", scheme), ("steps", claim.get("steps")), ("epochs", claim.get("epochs")),
                              ("sigma", claim.get("sigma")), ("stages", claim.get("stages"))) if v is not None}


def run_differences(run: dict, claim: dict) -> list[str]:
    """Where the manifest's run is not the claim (own copy of trainer.seal's rule)."""
    want = claim_run(claim)
    diffs = [f"{k}: trained {run.get(k)!r}, certified {want.get(k)!r}"
             for k in ("scheme", "steps", "epochs", "sigma", "stages") if run.get(k) != want.get(k)]
    stages = want.get("stages") or [{"steps": want.get("steps"), "epochs": want.get("epochs")}]
    try:
        total = sum(int(s["steps"]) * int(s["epochs"]) for s in stages)
    except (TypeError, KeyError, ValueError):
        total = None
    if run.get("steps_done") != total:
        diffs.append(f"steps done: {run.get('steps_done')!r}, the certified run has {total!r}")
    return diffs


def check_model_signing(model_dir: str, ec_key_paths: list[str]) -> str | None:
    """None if model.sig verifies with one of the keys over exactly MODEL_DIR's files, else why not."""
    try:
        import model_signing
    except ImportError as err:
        raise MissingModelSigning(f"--release needs the model-signing package (pip install model-signing "
                                  f"pyopenssl, or sigmacert[release]): {err}") from None
    sig = os.path.join(model_dir, SIGNATURE_FILE)
    if not os.path.isfile(sig):
        return "model.sig is missing"
    why = "no ECDSA release key given"
    for path in ec_key_paths:
        try:
            model_signing.verifying.Config().use_elliptic_key_verifier(public_key=path).verify(model_dir, sig)
            return None
        except Exception as err:  # model_signing raises ValueError and its format's own errors
            why = summarize(str(err)) or type(err).__name__
    return why


def summarize(message: str) -> str:
    """model_signing's mismatch message as file names (its digests are printed as Python bytes)."""
    q = r"\\?'"     # model_signing prints a list of messages: its quotes may come escaped
    parts = [f"{what}: {', '.join(names)}" for what, names in (
        ("files changed", re.findall(rf"Hash mismatch for {q}([^'\\]+){q}", message)),
        ("files added", re.findall(rf"Extra files found in model {q}[^']*{q}: ([^\"'\\\]]+)", message)),
        ("files missing", re.findall(rf"Missing files in model {q}[^']*{q}: ([^\"'\\\]]+)", message))) if names]
    if parts:
        return "model.sig does not match the directory: " + "; ".join(parts)
    return message.splitlines()[0][:300] if message else ""


def check_card(model_dir: str, claim: dict, cert_sha: str, cert_keyid: str | None) -> tuple[str, list[str]]:
    """("checked" | "absent" | why not, mismatches) of README.md's privacy metadata against the certificate."""
    path = os.path.join(model_dir, CARD_FILE)
    if not os.path.isfile(path):
        return "absent", []
    try:
        from huggingface_hub import ModelCard
    except ImportError:
        return "not checked (huggingface_hub is not installed)", []
    try:
        meta = ModelCard.load(path).data.to_dict().get("privacy")
    except Exception as err:  # a hostile card: any parse failure is a mismatch, not a crash
        return "checked", [f"README.md is not a model card ({type(err).__name__})"]
    if not isinstance(meta, dict):
        return "checked", ["README.md has no privacy metadata"]
    want = {"sigma": claim.get("sigma"), "steps_per_epoch_M": claim.get("steps"), "epochs_E": claim.get("epochs"),
            "certificate_sha256": cert_sha, "certificate_keyid": cert_keyid, "claim": claim.get("statement")}
    return "checked", [f"card {k}: {meta.get(k)!r}, certificate {v!r}" for k, v in want.items()
                       if v is not None and meta.get(k) != v]


def verify_release(model_dir: str, key_paths: list[str], replay) -> ReleaseResult:
    """Every check of the module docstring. `replay(certificate bytes, Ed25519 keys)` -> verifier.Result
    (the CLI runs it in a capped child). Raises ValueError/OSError only for usage errors."""
    pems = []
    for p in key_paths:
        with open(p, "rb") as f:
            pems.append(f.read(64 * 1024))
    try:
        ecs, eds = load_keys(pems)
    except ValueError as err:
        raise ValueError(f"key: {err}") from None
    if not ecs or not eds:
        raise ValueError("--release needs the release's ECDSA public key and the certificate issuer's Ed25519 "
                         "public key (give --key twice)")
    if not os.path.isdir(model_dir):
        raise ValueError(f"no such release directory: {model_dir}")
    res = ReleaseResult(False)
    fail = lambda reason, detail: res.failures.append({"reason": reason, "detail": detail})
    ec_paths = [p for p, pem in zip(key_paths, pems) if load_keys([pem])[0]]
    why = check_model_signing(model_dir, ec_paths)
    if why is not None:
        fail("model-signing", why)
    stmt = None
    try:
        with open(os.path.join(model_dir, MANIFEST_FILE), "rb") as f:
            stmt, res.release_keyid = open_ec_envelope(f.read(MAX_FILE), ecs)
    except FileNotFoundError:
        fail("manifest-signature", "release.dsse.json is missing")
    except Reject as r:
        fail("manifest-signature", r.detail)
    try:
        with open(os.path.join(model_dir, CERT_FILE), "rb") as f:
            cert = f.read(MAX_FILE)
    except FileNotFoundError:
        cert = None
        fail("certificate", "certificate.json is missing")
    if cert is not None:
        out = replay(cert, eds)
        res.certificate = out.__dict__ if hasattr(out, "__dict__") else dict(out)
        if out.accepted:
            res.claim = out.claim
        else:
            fail("certificate", f"the certificate does not verify ({out.reason}): {out.detail}")
    if stmt is not None:
        pred = stmt.get("predicate") if isinstance(stmt.get("predicate"), dict) else {}
        _check_subjects(model_dir, stmt, res, fail)
        mc = pred.get("certificate") if isinstance(pred.get("certificate"), dict) else {}
        cert_sha = hashlib.sha256(cert).hexdigest() if cert is not None else None
        if cert_sha is not None and mc.get("sha256") != cert_sha:
            fail("manifest-certificate", f"certificate.json has sha256 {cert_sha[:16]}..., the manifest names "
                 f"{str(mc.get('sha256'))[:16]}...: the certificate was swapped")
        res.run = pred.get("run") if isinstance(pred.get("run"), dict) else None
        if res.claim is not None:
            if mc.get("claim") != res.claim:
                fail("manifest-certificate", "the manifest's copy of the claim is not the certificate's claim")
            diffs = run_differences(res.run or {}, res.claim)
            if diffs:
                fail("run-not-claim", "the training run is not the certified one: " + "; ".join(diffs))
            res.card, bad = check_card(model_dir, res.claim, cert_sha, (res.certificate or {}).get("keyid"))
            if bad:
                fail("card", "; ".join(bad))
    res.accepted = not res.failures
    return res


def _check_subjects(model_dir: str, stmt: dict, res: ReleaseResult, fail) -> None:
    subjects = stmt.get("subject")
    if not isinstance(subjects, list):
        fail("manifest-subjects", "the Statement has no subject list")
        return
    named = {}
    for s in subjects:
        if isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(s.get("digest"), dict):
            named[s["name"]] = s["digest"].get("sha256")
    on_disk = model_files(model_dir)
    bad = [f"{n} is not in the manifest" for n in on_disk if n not in named]
    for name, digest in sorted(named.items()):
        path = os.path.join(model_dir, *name.split("/"))
        if ".." in name.split("/") or not os.path.isfile(path):
            bad.append(f"{name} is missing")
            continue
        got = sha256_file(path)
        res.model_files.append({"name": name, "sha256": got, "matches": got == digest})
        if got != digest:
            bad.append(f"{name} has sha256 {got[:16]}..., the manifest says {str(digest)[:16]}...")
    if not named:
        bad.append("the manifest names no model file")
    if bad:
        fail("manifest-subjects", "; ".join(bad))
