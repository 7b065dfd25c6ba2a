"""A sealed release (docs/release.md): `sigmacert train --release --card` writes it, OpenSSF's model_signing
and `sigmacert-verify --release` accept it, and each tampering is rejected with its reason."""
from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import subprocess
import sys

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def _run(module, *args):
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=300)


def _cli(*args):
    return _run("sigmacert", *args)


def _verify(d, keys, cli=False):
    """sigmacert-verify --release as a command (cli) or in this process (its API: the same checks)."""
    if cli:
        r = _run("verifier", "--release", str(d), "--key", str(keys / "rel" / "public.pem"),
                 "--key", str(keys / "iss" / "public.pem"), "--json")
        assert r.returncode in (0, 1), r.stderr
        return r.returncode, json.loads(r.stdout)
    import verifier
    from verifier.release import verify_release
    res = verify_release(str(d), [str(keys / "rel" / "public.pem"), str(keys / "iss" / "public.pem")],
                         lambda data, k: verifier.verify_bytes(data, k))
    return (0 if res.accepted else 1), json.loads(json.dumps(res.as_dict()))


def _reasons(out):
    return {f["reason"] for f in out["failures"]}


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    assert _cli("keygen", "-o", str(d / "iss")).returncode == 0
    r = _cli("keygen", "--kind", "ecdsa-p256", "-o", str(d / "rel"), "--json")
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(d / "rel" / "private.pem").st_mode) == 0o600
    rel = serialization.load_pem_private_key((d / "rel" / "private.pem").read_bytes(), None)  # PKCS#8, unencrypted
    assert isinstance(rel, ec.EllipticCurvePrivateKey) and rel.curve.name == "secp256r1"
    for name, cell in (("cert.json", ("12", "3")), ("other.json", ("10", "3"))):
        r = _cli("certify", "--steps", cell[0], "--epochs", cell[1], "--target", "0.3", "--sigma", "1.5",
                 "--key", str(d / "iss" / "private.pem"), "-o", str(d / name), "--quiet")
        assert r.returncode == 0, r.stderr
    return d


@pytest.fixture(scope="module")
def release(keys, tmp_path_factory):
    out = tmp_path_factory.mktemp("rel") / "model"
    r = _cli("train", "--certificate", str(keys / "cert.json"), "--key", str(keys / "iss" / "public.pem"),
             "--dataset", "digits", "--seed", "3", "-o", str(out), "--release", str(keys / "rel" / "private.pem"),
             "--card", "--json")
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(out)) == ["README.md", "certificate.json", "model.npy", "model.sig",
                                       "release.dsse.json", "release.json"]
    return out


def _copy(release, tmp_path):
    d = tmp_path / "copy"
    shutil.copytree(release, d)
    return d


def test_model_signing_and_sigmacert_verify_accept(release, keys):
    import model_signing
    model_signing.verifying.Config().use_elliptic_key_verifier(public_key=keys / "rel" / "public.pem").verify(
        release, release / "model.sig")           # raises unless every file is intact and none added
    code, out = _verify(release, keys, cli=True)
    assert code == 0 and out["result"] == "ACCEPT" and out["failures"] == []
    assert [m["name"] for m in out["model_files"]] == ["model.npy"] and out["model_files"][0]["matches"]
    run = out["run"]
    assert (run["steps"], run["epochs"], run["sigma"], run["steps_done"]) == (12, 3, "1.5", 36)
    assert out["certificate"]["accepted"] and out["card"] == "checked"
    # the training record: seed commitment (the seed itself is not in the release), sampler, divisor, data digest
    rec = json.loads((release / "release.json").read_text())
    run = rec["training"]["run"]
    assert "seed" not in rec["training"] and len(run["seed_commitment"]["sha256"]) == 64
    assert run["n0"] == 1438 and run["b0"] == 1438 / 12 and run["divisor"].startswith("B0 = N0/M")
    assert len(rec["dataset"]["sha256"]) == 64
    opening = release.parent / "model.seed-opening.json"
    assert stat.S_IMODE(os.stat(opening).st_mode) == 0o600 and json.loads(opening.read_text())["seed"] == 3
    from certifier.certificate.envelope import canonical_json
    from trainer.release import sha256_bytes
    assert sha256_bytes(canonical_json(json.loads(opening.read_text()))) == run["seed_commitment"]["sha256"]


def test_model_card_metadata(release, keys):
    from huggingface_hub import ModelCard
    meta = ModelCard.load(release / "README.md").data.to_dict()["privacy"]
    env = json.loads((keys / "cert.json").read_text())
    import hashlib
    assert meta["sigma"] == "1.5" and meta["steps_per_epoch_M"] == 12 and meta["epochs_E"] == 3
    assert meta["target_kind"] == "tv" and meta["target"] == {"lambda": "0.3"}
    assert meta["certificate_sha256"] == hashlib.sha256((keys / "cert.json").read_bytes()).hexdigest()
    assert meta["certificate_keyid"] == env["signatures"][0]["keyid"]
    assert "membership-inference" in meta["claim"]


def test_one_byte_of_the_model_changed(release, keys, tmp_path):
    d = _copy(release, tmp_path)
    data = bytearray((d / "model.npy").read_bytes())
    data[-1] ^= 1
    (d / "model.npy").write_bytes(bytes(data))
    code, out = _verify(d, keys, cli=True)
    assert code == 1 and _reasons(out) == {"model-signing", "manifest-subjects"}
    assert "files changed: model.npy" in out["failures"][0]["detail"]


def test_a_file_added_is_rejected(release, keys, tmp_path):
    d = _copy(release, tmp_path)
    (d / "extra.bin").write_bytes(b"x")
    code, out = _verify(d, keys)
    assert code == 1 and _reasons(out) == {"model-signing", "manifest-subjects"}
    assert "files added: extra.bin" in " ".join(f["detail"] for f in out["failures"])


def _statement(d):
    env = json.loads((d / "release.dsse.json").read_text())
    return env, json.loads(base64.b64decode(env["payload"]))


@pytest.mark.parametrize("field,value", [("sigma", "1.4"), ("epochs", 4)])
def test_manifest_edited_without_the_key(release, keys, tmp_path, field, value):
    d = _copy(release, tmp_path)
    env, stmt = _statement(d)
    stmt["predicate"]["run"][field] = value
    env["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    (d / "release.dsse.json").write_text(json.dumps(env))
    code, out = _verify(d, keys)
    assert code == 1 and _reasons(out) == {"model-signing", "manifest-signature"}


@pytest.mark.parametrize("field,value", [("sigma", "1.4"), ("epochs", 4)])
def test_manifest_signed_for_another_run(release, keys, tmp_path, field, value):
    """A release key holder who trained with another sigma, or longer, than certified: every signature is
    valid, the run is not the claim."""
    from certifier.certificate.ecdsa import sign_envelope_ec
    from certifier.certificate.keys import load_release_private
    from trainer.seal import model_sign
    d = _copy(release, tmp_path)
    _, stmt = _statement(d)
    stmt["predicate"]["run"][field] = value
    if field == "epochs":
        stmt["predicate"]["run"]["steps_done"] = 12 * value
    key = keys / "rel" / "private.pem"
    (d / "release.dsse.json").write_text(json.dumps(sign_envelope_ec(stmt, load_release_private(str(key)))))
    model_sign(str(d), str(key))
    code, out = _verify(d, keys)
    assert code == 1 and _reasons(out) == {"run-not-claim"}
    assert f"{field}: trained {value!r}" in out["failures"][0]["detail"]


def test_certificate_swapped_for_another_valid_one(release, keys, tmp_path):
    d = _copy(release, tmp_path)
    shutil.copyfile(keys / "other.json", d / "certificate.json")
    code, out = _verify(d, keys)
    assert code == 1 and out["certificate"]["accepted"]          # the other certificate is valid ...
    assert {"model-signing", "manifest-certificate", "run-not-claim", "card"} == _reasons(out)   # ... not this run's
    details = " ".join(f["detail"] for f in out["failures"])
    assert "steps: trained 12, certified 10" in details and "files changed: certificate.json" in details


def test_seal_refuses_a_record_for_another_cell(release, keys, tmp_path):
    d = _copy(release, tmp_path)
    r = _cli("release", str(d), "--certificate", str(keys / "other.json"), "--key", str(keys / "rel" / "private.pem"))
    assert r.returncode == 1 and "not" in r.stderr and r.stderr.count("\n") == 1


def test_usage_errors_are_one_line(release, keys):
    r = _cli("release", str(release), "--certificate", str(keys / "cert.json"),
             "--key", str(keys / "iss" / "private.pem"))
    assert r.returncode == 2 and "ECDSA" in r.stderr and r.stderr.count("\n") == 1
    r = _run("verifier", "--release", str(release), "--key", str(keys / "iss" / "public.pem"))
    assert r.returncode == 2 and "ECDSA public key" in r.stderr and "Traceback" not in r.stderr
    r = _run("verifier", "--release", str(release / "nope"), "--key", str(keys / "iss" / "public.pem"),
             "--key", str(keys / "rel" / "public.pem"))
    assert r.returncode == 2 and "no such release directory" in r.stderr


def test_report_shows_the_binding_and_the_log(release, keys, tmp_path):
    arc = tmp_path / "arc"
    iss = str(keys / "iss" / "private.pem")
    assert _cli("log", "append", str(arc), str(keys / "other.json"), "--key", iss).returncode == 0
    assert _cli("log", "append", str(arc), str(release / "certificate.json"),
                "--key", str(keys / "iss" / "private.pem")).returncode == 0
    r = _cli("log", "proof", str(arc), str(release / "certificate.json"), "-o", str(tmp_path / "p.json"))
    assert r.returncode == 0, r.stderr
    args = [str(release / "certificate.json"), "--key", str(keys / "iss" / "public.pem"), "--release", str(release),
            "--release-key", str(keys / "rel" / "public.pem"), "--log-proof", str(tmp_path / "p.json"), "--quiet"]
    r = _cli("report", *args, "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr + r.stdout
    html = (tmp_path / "r.html").read_text()
    assert "Release binding: ACCEPT" in html and "Log inclusion: ACCEPT" in html and "model.npy" in html
    bad = _copy(release, tmp_path)
    shutil.copyfile(keys / "other.json", bad / "certificate.json")
    r = _cli("report", str(bad / "certificate.json"), *args[1:3], "--release", str(bad), *args[5:7],
             "-o", str(tmp_path / "bad.html"), "--quiet")
    assert r.returncode == 1 and "REJECT (release)" in r.stdout
    assert "Release binding: REJECT" in (tmp_path / "bad.html").read_text()
