"""`sigmacert atlas` on real Dask processes: a `dask scheduler` and two `dask worker` processes on
loopback (our own ports), the local default cluster, a worker killed mid-cell, Ctrl-C, resumption;
plus the grid, index, progress and heatmap pieces on their own.

The four cells (M=2, E in {4, 8}, lambda in {0.1, 0.2}) certify two-sided with method v1 (format
v2, which the independent verifier replays) in 3.5-5 s of CPU each. A scheme the certifier does not
know fails at once, which exercises the failure path end to end.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from decimal import Decimal

import pytest
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from certifier.certificate.envelope import load_envelope, verify_envelope
from certifier.certificate.keys import keygen, load_private, load_public
from certifier.claim import FIXED_BINS
from certifier.claim import RANDOM_ALLOCATION as DEFAULT_SCHEME
from certifier.errors import ParameterError
from sigmacert.atlas.cells import Cell, claim_scheme, grid_cells
from sigmacert.atlas.heatmap import render
from sigmacert.atlas.index import certified_entry, failed_entry, pending_entry, summary
from sigmacert.atlas.progress import Progress, eta_seconds
from sigmacert.atlas.store import AtlasStore
from sigmacert.atlas.work import certify_cell, verify_certificate
from sigmacert.cli import main
from sigmacert.files import TMP_PREFIX, write_atomic

STEPS, EPOCHS, TARGETS = "2", "4,8", "0.1,0.2"
CELLS = {(2, 4, "0.1"), (2, 4, "0.2"), (2, 8, "0.1"), (2, 8, "0.2")}
# the interrupted run: eight cells of about 2 s each (the four above and M = 3), so that cells are
# still pending when the first is written and still computing when the resumed run starts
STEPS_LONG = "2,3"
CELLS_LONG = CELLS | {(3, e, lam) for (_, e, lam) in CELLS}
DASK = os.path.join(os.path.dirname(sys.executable), "dask")
LOOPBACK = ["--host", "127.0.0.1", "--no-dashboard", "--dashboard-address", "127.0.0.1:0"]


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def keydir(tmp_path_factory):
    d = tmp_path_factory.mktemp("atlas-keys") / "k"
    keygen(str(d))
    return d


class Cluster:
    """A scheduler and two workers (real `dask` processes) and a client of ours."""

    def __init__(self, root):
        from distributed import Client
        self.root, self.procs = root, {}
        sfile = root / "scheduler.json"
        log = open(root / "dask.log", "wb")
        self.procs["scheduler"] = subprocess.Popen(
            [DASK, "scheduler", "--port", "0", "--scheduler-file", str(sfile), *LOOPBACK], stdout=log, stderr=log)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.address = json.loads(sfile.read_text())["address"]
                break
            except (OSError, ValueError, KeyError):
                assert time.monotonic() < deadline, "the dask scheduler did not start"
                time.sleep(0.2)
        assert self.address.startswith("tcp://127.0.0.1:")
        for name in ("w0", "w1"):
            self.procs[name] = subprocess.Popen(
                [DASK, "worker", "--scheduler-file", str(sfile), "--nthreads", "1", "--no-nanny", "--name", name,
                 "--local-directory", str(root), *LOOPBACK], stdout=log, stderr=log)
        self.client = Client(self.address, timeout="60s")
        self.client.wait_for_workers(2, timeout=120)

    def close(self):
        self.client.close()
        for p in self.procs.values():
            p.terminate()
        for p in self.procs.values():
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("dask"))
    yield c
    c.close()


class Recording:
    """A distributed.Client that records what the engine sends to the workers."""

    def __init__(self, client):
        self.client, self.calls = client, []

    def submit(self, fn, *args, **kwargs):
        self.calls.append((fn, args))
        return self.client.submit(fn, *args, **kwargs)

    def cancel(self, futures):
        return self.client.cancel(futures)


def _run(client, out, keydir, epochs=EPOCHS, targets=TARGETS, scheme=DEFAULT_SCHEME, steps=STEPS):
    from sigmacert.atlas.engine import run_atlas
    return run_atlas(client, grid_cells(steps, epochs, targets), scheme=scheme,
                     key=load_private(str(keydir / "private.pem")), out_dir=str(out))


def _by_cell(index):
    return {(c["M"], c["E"], c["lambda"]): c for c in index["cells"]}


def _numbers(index):
    return {k: (c["sigma"], c["sigma_low"], c["bound"]) for k, c in _by_cell(index).items()}


@pytest.fixture(scope="module")
def first_run(cluster, keydir, tmp_path_factory):
    out = tmp_path_factory.mktemp("atlas") / "first"
    rec = Recording(cluster.client)
    index = _run(rec, out, keydir)
    return out, index, rec.calls


# ----------------------------------------------------------------------------- on a dask scheduler

def test_scheduler_atlas_certifies_every_cell(first_run, cluster, keydir):
    """Four cells on `dask scheduler` + two `dask worker`: every certificate is written, indexed by its
    SHA-256, and accepted by the independent verifier with the indexed claim; sigma_low < sigma."""
    from verifier import verify_file
    out, index, _ = first_run
    assert index["summary"] == {"cells": 4, "certified": 4, "failed": 0, "pending": 0, "reused": 0}
    assert json.loads((out / "index.json").read_text()) == index
    cells = _by_cell(index)
    assert set(cells) == CELLS
    for (m, e, lam), c in cells.items():
        assert c["file"] == f"certificates/M{m}_E{e}_L{lam}.json" and c["scheme"] == DEFAULT_SCHEME
        assert hashlib.sha256((out / c["file"]).read_bytes()).hexdigest() == c["sha256"]
        assert c["two_sided"] and Decimal(c["sigma_low"]) < Decimal(c["sigma"])
        assert Decimal(c["bound"]) <= Decimal(lam) and c["seconds"] > 0
    paths = [str(out / c["file"]) for c in cells.values()]
    results = cluster.client.gather(cluster.client.map(verify_file, paths, pure=False,
                                                       public_keys=[(out / "public.pem").read_bytes()]))
    for c, r in zip(cells.values(), results):
        assert r.accepted, r.detail
        assert (r.claim["steps"], r.claim["epochs"], r.claim["target"], r.claim["sigma"]) == (
            c["M"], c["E"], c["lambda"], c["sigma"])
    assert (out / "public.pem").read_bytes() == (keydir / "public.pem").read_bytes()
    svg = (out / "heatmap.svg").read_text()
    assert index["heatmap"] == "heatmap.svg" and all(c["sigma"] in svg for c in cells.values())  # certified decimals


def _assert_no_key_material(calls, keydir):
    raw = load_private(str(keydir / "private.pem")).private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    pem = (keydir / "private.pem").read_bytes()
    for fn, args in calls:
        assert fn in (certify_cell, verify_certificate)
        blob = pickle.dumps(args)
        assert raw not in blob and pem not in blob and b"PRIVATE" not in blob


def test_the_private_key_never_reaches_a_worker(first_run, keydir):
    """Everything submitted is a worker function and its arguments: no key material among them."""
    _, _, calls = first_run
    assert len(calls) == 4 and {fn for fn, _ in calls} == {certify_cell}
    _assert_no_key_material(calls, keydir)


def test_resume_reuses_verified_recomputes_tampered_and_records_failures(first_run, cluster, keydir):
    """Run again (E = 4 only) after tampering with one certificate and leaving a stale temporary
    file: the intact certificate is replayed and reused, the tampered one is certified again; a
    cell that cannot be certified (here: an unknown scheme) is recorded with its reason."""
    out, index, _ = first_run
    tampered = out / "certificates" / "M2_E4_L0.2.json"
    env = json.loads(tampered.read_bytes())
    sig = env["signatures"][0]["sig"]
    env["signatures"][0]["sig"] = ("B" if sig[0] == "A" else "A") + sig[1:]
    tampered.write_text(json.dumps(env))
    (out / "certificates" / (TMP_PREFIX + "left-by-a-killed-run")).write_bytes(b"{")
    rec = Recording(cluster.client)
    again = _run(rec, out, keydir, epochs="4")
    assert again["summary"] == {"cells": 2, "certified": 2, "failed": 0, "pending": 0, "reused": 1}
    assert sorted(fn.__name__ for fn, _ in rec.calls) == ["certify_cell"] + ["verify_certificate"] * 2
    _assert_no_key_material(rec.calls, keydir)
    cells, first = _by_cell(again), _by_cell(index)
    assert cells[(2, 4, "0.1")]["reused"] and cells[(2, 4, "0.1")]["seconds"] == first[(2, 4, "0.1")]["seconds"]
    assert not cells[(2, 4, "0.2")]["reused"]
    for k in ((2, 4, "0.1"), (2, 4, "0.2")):
        assert cells[k]["sha256"] == hashlib.sha256((out / cells[k]["file"]).read_bytes()).hexdigest()
        assert (cells[k]["sigma"], cells[k]["bound"]) == (first[k]["sigma"], first[k]["bound"])
    assert not [p for p in os.listdir(out / "certificates") if p.startswith(TMP_PREFIX)]
    failed = _run(cluster.client, out.parent / "failed", keydir, epochs="4", targets="0.1", scheme="poisson")
    (bad,) = failed["cells"]
    assert failed["summary"]["failed"] == 1 and bad["status"] == "failed" and "scheme" in bad["reason"]
    assert "file" not in bad and not os.listdir(out.parent / "failed" / "certificates")


def test_fixed_bins_cells_carry_their_scheme(first_run, cluster, keydir, tmp_path):
    """--scheme fixed-bins reaches the certifier: the certificate's claim and the index say fixed-bins,
    and at M = 1 (every record in every step) sigma is the random-allocation sigma of the same cell."""
    index = _run(cluster.client, tmp_path / "fb", keydir, epochs="3", targets="0.1", scheme=FIXED_BINS, steps="1")
    (cell,) = index["cells"]
    assert cell["status"] == "certified" and cell["scheme"] == FIXED_BINS
    (ra,) = _run(cluster.client, tmp_path / "ra", keydir, epochs="3", targets="0.1", steps="1")["cells"]
    assert ra["scheme"] == DEFAULT_SCHEME and cell["sigma"] == ra["sigma"]
    stmt = verify_envelope(load_envelope((tmp_path / "fb" / cell["file"]).read_bytes()),
                           load_public(str(keydir / "public.pem")))
    claim = stmt["predicate"]["claim"]
    assert claim["mechanism"] == "dp-sgd/fixed-bins" and claim_scheme(claim) == FIXED_BINS


@pytest.fixture(scope="module")
def interrupted(cluster, keydir, tmp_path_factory):
    """`sigmacert atlas --scheduler` as a process, interrupted (SIGINT) once one cell is written."""
    out = tmp_path_factory.mktemp("atlas") / "interrupted"
    proc = subprocess.Popen([sys.executable, "-m", "sigmacert", "atlas", "-M", STEPS_LONG, "-E", EPOCHS, "-l", TARGETS,
                             "--key", str(keydir / "private.pem"), "-o", str(out), "--scheduler", cluster.address],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # a shell's background job ignores SIGINT, and Python keeps an ignored
                            # SIGINT ignored: give the command the default, as at a terminal
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 240
    while True:
        try:
            if json.loads((out / "index.json").read_text())["summary"]["certified"] >= 1:
                break
        except (OSError, ValueError, KeyError):
            pass
        assert proc.poll() is None and time.monotonic() < deadline, "the atlas ended before it was interrupted"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return out, proc.returncode, err


def test_ctrl_c_leaves_a_consistent_directory(interrupted):
    """Exit 130; the index parses, lists every cell, and every certified entry's file has its SHA-256;
    every certificate file is a whole envelope; no temporary file is left."""
    out, rc, err = interrupted
    assert rc == 130 and "interrupted" in err
    index = json.loads((out / "index.json").read_text())
    cells = _by_cell(index)
    assert set(cells) == CELLS_LONG
    assert 1 <= index["summary"]["certified"] < 8
    assert index["summary"]["pending"] == 8 - index["summary"]["certified"]
    for c in cells.values():
        if c["status"] == "certified":
            assert hashlib.sha256((out / c["file"]).read_bytes()).hexdigest() == c["sha256"]
    for name in os.listdir(out / "certificates"):
        assert not name.startswith(TMP_PREFIX)
        load_envelope((out / "certificates" / name).read_bytes())


def test_worker_killed_mid_cell_all_cells_still_finish(interrupted, first_run, cluster, keydir):
    """Resume the interrupted atlas; SIGKILL one `dask worker` while it computes a cell. Every cell
    still finishes, with the numbers of the first run, and the killed cell's certificate verifies."""
    from distributed import Client

    from verifier import verify_file
    out = interrupted[0]
    result, client = {}, Client(cluster.address, timeout="60s")
    runner = threading.Thread(target=lambda: result.update(index=_run(client, out, keydir, steps=STEPS_LONG)))
    runner.start()
    killed = None
    deadline = time.monotonic() + 240
    while killed is None and runner.is_alive() and time.monotonic() < deadline:
        for addr, keys in cluster.client.processing().items():
            busy = [k for k in keys if str(k).startswith("atlas-certify-")]
            if busy:
                time.sleep(0.5)
                if busy[0] in cluster.client.processing().get(addr, ()):
                    name = cluster.client.scheduler_info()["workers"][addr]["name"]
                    cluster.procs[name].kill()
                    killed = str(busy[0])
                break
        time.sleep(0.05)
    runner.join(300)
    client.close()
    assert killed is not None, "no worker was caught computing a cell"
    index = result["index"]
    assert index["summary"]["certified"] == 8 and index["summary"]["pending"] == 0
    first = _numbers(first_run[1])
    assert {k: v for k, v in _numbers(index).items() if k in first} == first
    cell = next(c for c in index["cells"] if killed.startswith(f"atlas-certify-M{c['M']}_E{c['E']}_L{c['lambda']}-"))
    assert not cell["reused"]
    assert verify_file(str(out / cell["file"]), [str(out / "public.pem")]).accepted


# ----------------------------------------------------------------------------- the local default

def test_local_default_cluster_runs_the_same_cells(first_run, keydir, tmp_path, capsys):
    """Without --scheduler: a LocalCluster of two worker processes; the same sigma, sigma_low and bound."""
    out = tmp_path / "local"
    rc = main(["atlas", "-M", STEPS, "-E", EPOCHS, "-l", TARGETS, "--key", str(keydir / "private.pem"),
               "-o", str(out), "--workers", "2", "--json", "--quiet"])
    summ = json.loads(capsys.readouterr().out)
    assert rc == 0 and summ["certified"] == 4 and summ["failures"] == []
    index = json.loads((out / "index.json").read_text())
    assert _numbers(index) == _numbers(first_run[1])


# ----------------------------------------------------------------------------- the pieces

def test_grid_is_parsed_exactly_sorted_and_named():
    cells = grid_cells("100, 50,50", "10", "0.10,0.05")
    assert cells == [Cell(50, 10, "0.05"), Cell(50, 10, "0.1"), Cell(100, 10, "0.05"), Cell(100, 10, "0.1")]
    assert cells[1].file == "certificates/M50_E10_L0.1.json"
    for bad in (("", "1", "0.1"), ("1,,2", "1", "0.1"), ("0", "1", "0.1"), ("1", "x", "0.1"), ("1", "1", "1"),
                ("1", "1", "0.1e"), ("1-100", "1", "0.1"), (",".join(map(str, range(1, 200))), "1,2,3,4,5,6,7,8,9",
                                                            "0.1,0.2,0.3,0.4,0.5,0.6,0.7")):
        with pytest.raises(ParameterError):
            grid_cells(*bad)


@pytest.mark.parametrize("args", [["-M", "0"], ["-E", "1.5"], ["-l", "0"], ["--workers", "0"],
                                  ["--key", "/nonexistent/private.pem"], ["--scheme", "poisson"]])
def test_bad_input_is_one_line_exit_2_before_any_cluster(args, keydir, tmp_path, capsys):
    base = {"-M": "1", "-E": "2", "-l": "0.1", "--key": str(keydir / "private.pem"), "-o": str(tmp_path / "a")}
    base.update(dict(zip(args[::2], args[1::2])))
    try:
        rc = main(["atlas", *[x for kv in base.items() for x in kv]])
    except SystemExit as exit_:  # argparse's own one-line errors (e.g. --scheme poisson)
        rc = exit_.code
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("sigmacert") and "error:" in err and err.count("\n") == 1
    assert not (tmp_path / "a").exists()


def _claim(steps, epochs, sigma, target):
    return {"mechanism": "dp-sgd/random-allocation", "adjacency": "zero-out", "steps": steps, "epochs": epochs,
            "sigma": sigma, "target": target, "statement": "TV <= target"}


def test_a_cell_matches_only_its_own_claim():
    claim = _claim(1, 2, "5.627083", "0.10")
    assert claim_scheme(claim) == "random-allocation"
    assert Cell(1, 2, "0.1").matches(claim, "random-allocation")
    assert not Cell(1, 2, "0.2").matches(claim, "random-allocation")
    assert not Cell(1, 4, "0.1").matches(claim, "random-allocation")
    assert not Cell(1, 2, "0.1").matches(claim, "fixed-bins")
    assert not Cell(1, 2, "0.1").matches({**claim, "scheme": "fixed-bins"}, "random-allocation")
    assert not Cell(1, 2, "0.1").matches({"steps": 1}, "random-allocation")


def test_worker_functions_report_refusals_and_verdicts(first_run):
    """certify_cell turns a refusal into a reason; verify_certificate rejects the bytes of a tampered file."""
    r = certify_cell(2, 4, "0.1", "poisson")
    assert r["ok"] is False and "scheme" in r["reason"]
    out, index, _ = first_run
    data = (out / _by_cell(index)[(2, 4, "0.1")]["file"]).read_bytes()
    pem = (out / "public.pem").read_bytes()
    bad = verify_certificate(data.replace(b'"payload":"', b'"payload":"AA', 1), pem)
    assert bad["accepted"] is False and bad["reason"] != "accepted"


def _entries():
    pred = {"claim": _claim(1, 2, "5.627083", "0.1"), "bound": "0.0999", "lower": {"sigma_low": "5.627082"}}
    return [certified_entry(Cell(1, 2, "0.1"), DEFAULT_SCHEME, pred, "ab" * 32, {"seconds": 4.0}, False),
            failed_entry(Cell(1, 2, "0.2"), DEFAULT_SCHEME, "cannot certify: too heavy-tailed", 0.1),
            pending_entry(Cell(2, 2, "0.1"), DEFAULT_SCHEME)]


def test_index_entries_and_summary():
    ok, bad, todo = _entries()
    assert ok["sigma"] == "5.627083" and ok["sigma_low"] == "5.627082" and ok["two_sided"]
    assert ok["file"] == "certificates/M1_E2_L0.1.json" and ok["seconds"] == 4.0 and ok["cpu_seconds"] is None
    assert bad["reason"].startswith("cannot certify") and todo["status"] == "pending"
    assert summary([ok, bad, todo]) == {"cells": 3, "certified": 1, "failed": 1, "pending": 1, "reused": 0}


def test_heatmap_is_deterministic_and_labels_every_cell():
    svg = render(_entries(), DEFAULT_SCHEME)
    assert svg == render(_entries(), DEFAULT_SCHEME)
    text = svg.decode()
    assert "5.627" in text and "×" in text and "·" in text and text.count("λ = ") == 2 and "λ = 0.2" in text
    assert text.startswith("<?xml") and "<dc:date>" not in text and "Matplotlib v" not in text


def test_progress_one_line_per_cell_or_a_live_bar():
    ok, bad, _ = _entries()
    counts = {"cells": 4, "certified": 1, "failed": 0, "pending": 3, "reused": 0}
    log = io.StringIO()
    p = Progress(4, stream=log, tty=False)
    p.cell(ok, counts)
    p.cell(bad, {**counts, "failed": 1, "pending": 2})
    p.tick(counts)
    lines = log.getvalue().splitlines()
    assert lines == ["[1/4] M=1 E=2 lambda=0.1: certified sigma 5.627083, sigma_low 5.627082, bound 0.0999 (4.0 s)",
                     "[2/4] M=1 E=2 lambda=0.2: FAILED: cannot certify: too heavy-tailed (0.1 s)"]
    t = iter([0.0, 10.0, 10.0, 10.0])
    term = io.StringIO()
    p = Progress(4, stream=term, tty=True, clock=lambda: next(t))
    p.cell(ok, counts)
    assert term.getvalue().startswith("\r") and "1/4 cells, 0 failed, 0 reused, 10s elapsed, ETA 30s" in term.getvalue()
    assert eta_seconds({**counts, "certified": 2, "reused": 1}, 10.0) == 20.0
    assert eta_seconds({**counts, "reused": 1}, 10.0) is None


def test_atomic_writes_leave_no_temporary_files(tmp_path):
    store = AtlasStore(str(tmp_path / "a"))
    os.makedirs(tmp_path / "a" / "certificates")
    (tmp_path / "a" / (TMP_PREFIX + "x")).write_bytes(b"")
    store.prepare(b"PUBLIC")
    assert sorted(os.listdir(tmp_path / "a")) == ["certificates", "public.pem"]
    write_atomic(str(tmp_path / "f"), b"1")
    write_atomic(str(tmp_path / "f"), b"2")
    assert sorted(os.listdir(tmp_path)) == ["a", "f"]
    assert (tmp_path / "f").read_bytes() == b"2"
