"""`sigmacert serve --scheduler tls://...`: the key holder trusts nothing the cluster returns.

The test makes a small CA (cryptography), starts its own Dask scheduler on loopback with TLS (mutual
authentication: every peer presents a certificate of that CA), and first a hostile worker whose task
returns a forged predicate (the honest computation with its bound lowered far below the target,
tests/service/dask_forger.py). The job must fail with the replay's reason and nothing may be signed. Then an
honest worker replaces it: the identical request is queued again, computed on the cluster, replayed by
the independent verifier, signed, and the certificate verifies offline.
"""
from __future__ import annotations

import datetime
import ipaddress
import json
import os
import subprocess
import sys

import pytest
from service_fixtures import SIGMACERT, free_port, issuer_pem, serving, verify_cli, wait_done, wait_for

from certifier.errors import ParameterError
from service.cluster import Cluster

DASK = os.path.join(os.path.dirname(sys.executable), "dask")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SMALL = {"steps": 2, "epochs": 4, "target": "0.2", "sigma": "4"}  # two-sided, about 2 s


def make_ca(d: str) -> dict:
    """A CA and certificates for 127.0.0.1 signed by it: scheduler, worker, client; plus a stranger's
    self-signed client certificate. PEM files in `d`; returns their paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    now = datetime.datetime.now(datetime.timezone.utc)
    name = lambda cn: x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])  # noqa: E731

    def write(stem, key, cert):
        kp, cp = os.path.join(d, f"{stem}.key"), os.path.join(d, f"{stem}.pem")
        with open(kp, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        os.chmod(kp, 0o600)
        with open(cp, "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        return kp, cp

    def issue(cn, signer_key, signer_name, ca=False):
        key = ec.generate_private_key(ec.SECP256R1())
        b = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(signer_name or name(cn))
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            b = (b.add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                              x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                 critical=False)
                 .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                       ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        return key, b.sign(signer_key or key, hashes.SHA256())

    ca_key, ca_cert = issue("sigmacert test CA", None, None, ca=True)
    out = {"ca": write("ca", ca_key, ca_cert)[1]}
    for who in ("scheduler", "worker", "client"):
        out[f"{who}_key"], out[f"{who}_cert"] = write(who, *issue(who, ca_key, ca_cert.subject))
    out["stranger_key"], out["stranger_cert"] = write("stranger", *issue("stranger", None, None))
    return out


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("dask-tls")
    pki = make_ca(str(root))
    tls = lambda who: ["--tls-ca-file", pki["ca"], "--tls-cert", pki[f"{who}_cert"],  # noqa: E731
                       "--tls-key", pki[f"{who}_key"]]
    sfile, log = root / "scheduler.json", open(root / "dask.log", "wb")
    env = {**os.environ, "PYTHONPATH": ROOT}
    procs = {"scheduler": subprocess.Popen(
        [DASK, "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", str(free_port()),
         "--scheduler-file", str(sfile), "--no-dashboard", *tls("scheduler")], stdout=log, stderr=log, env=env)}

    def worker(name: str, *extra: str):
        procs[name] = subprocess.Popen(
            [DASK, "worker", "--scheduler-file", str(sfile), "--nthreads", "1", "--no-nanny", "--name", name,
             "--host", "127.0.0.1", "--no-dashboard", "--local-directory", str(root), *tls("worker"), *extra],
            stdout=log, stderr=log, env=env)
        return procs[name]
    try:
        address = wait_for(lambda: sfile.exists() and json.loads(sfile.read_text() or "{}").get("address"), 60, 0.2)
        assert address.startswith("tls://127.0.0.1:")
        yield {"address": address, "pki": pki, "worker": worker, "procs": procs, "log": root / "dask.log"}
    finally:
        for p in procs.values():
            p.terminate()
        for p in procs.values():
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()


def tls_flags(c, who="client"):
    return ["--scheduler", c["address"], "--scheduler-ca", c["pki"]["ca"],
            "--scheduler-cert", c["pki"][f"{who}_cert"], "--scheduler-key", c["pki"][f"{who}_key"]]


def done_or_log(srv, jid, timeout):
    try:
        return wait_done(srv, jid, timeout)
    except AssertionError:
        raise AssertionError(f"job {jid} did not finish: {srv.http.get(f'/v1/certificates/{jid}').json()}; "
                             f"server log: {srv.log()}") from None


def test_a_forged_predicate_from_the_cluster_is_never_signed(tls_cluster, tmp_path):
    c = tls_cluster
    hostile = c["worker"]("hostile", "--preload", os.path.join(HERE, "dask_forger.py"))
    with serving("sigmacert-trust-", *tls_flags(c)) as srv:
        jid = srv.http.post("/v1/certificates", json=SMALL, headers=srv.auth).json()["id"]
        job = done_or_log(srv, jid, 180)
        assert job["status"] == "failed", job
        assert "not signed" in job["reason"] and "independent replay rejected" in job["reason"], job["reason"]
        assert "bound" in job["reason"].split("predicate: ")[1]  # the verifier's reason: the recorded bound is false
        assert "envelope" not in job and "keyid" not in job
        assert srv.http.get(f"/v1/certificates/{jid}/envelope").status_code == 409
        assert srv.http.get("/v1/certificates", params={"status": "done"}).json()["total"] == 0
        assert "independent replay rejected" in srv.log()

        # the hostile worker goes, an honest one comes: the identical request is computed again and signed
        hostile.terminate()
        hostile.wait(30)
        c["worker"]("honest")
        again = srv.http.post("/v1/certificates", json=SMALL, headers=srv.auth)
        assert again.status_code == 202 and again.json()["id"] == jid
        job = done_or_log(srv, jid, 240)
        assert job["status"] == "done", (job.get("reason"), srv.log())
        assert job["bound"] != "0.0000000001"
        cert = tmp_path / "cert.json"
        cert.write_bytes(srv.http.get(f"/v1/certificates/{jid}/envelope").content)
        out = verify_cli(cert, issuer_pem(srv, tmp_path / "issuer.pem"))
        assert out.returncode == 0 and out.stdout.startswith("ACCEPT"), out.stdout + out.stderr


def test_a_client_without_a_certificate_of_the_cluster_ca_is_refused_in_one_line(tls_cluster, tmp_path):
    out = subprocess.run([*SIGMACERT, "serve", "--port", str(free_port()), "--db", str(tmp_path / "db"),
                          *tls_flags(tls_cluster, "stranger")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Dask scheduler" in out.stderr, out.stderr
    assert not os.listdir(tmp_path)  # checked before any key or database is created


def test_a_plain_tcp_scheduler_needs_an_explicit_insecure_flag(tmp_path):
    out = subprocess.run([*SIGMACERT, "serve", "--port", str(free_port()), "--db", str(tmp_path / "db"),
                          "--scheduler", "tcp://127.0.0.1:1"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--insecure-scheduler" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not os.listdir(tmp_path)
    with pytest.raises(ParameterError, match="needs --scheduler-ca, --scheduler-cert, --scheduler-key"):
        Cluster.parse("tls://127.0.0.1:8786")
    with pytest.raises(ParameterError, match="need a tls:// scheduler"):
        Cluster.parse("tcp://127.0.0.1:8786", ca="x", insecure=True)
    assert Cluster.parse("tcp://127.0.0.1:8786", insecure=True).security() is None


def test_the_key_holder_is_never_a_dask_client():
    """Dask unpickles `__Pickled__` frames from any peer: the process with the private key must not talk
    to the cluster. service.worker imports no Dask; the relay (service.cluster's child) has no key."""
    import inspect

    import service.worker as w
    src = inspect.getsource(w)
    assert "distributed" not in src and "import dask" not in src
    import service.cluster as c
    assert "load_private" not in inspect.getsource(c) and "private" not in json.dumps(Cluster("tls://h:1").as_dict())
