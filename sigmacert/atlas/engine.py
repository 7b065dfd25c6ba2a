"""Run an atlas on a Dask client: submit every cell, collect, retry, sign on the driver, write.

A cell whose certificate file exists is first replayed by the independent verifier (on a
worker); if it is accepted under this run's key and its claim is this cell's, the cell is
reused, otherwise it is certified again. A worker that dies mid-cell costs only that cell:
the scheduler reschedules it, and a cell whose workers keep dying (KilledWorker) is
resubmitted up to MAX_SUBMISSIONS times before it is recorded as failed. A cell that cannot
be certified is recorded with its reason. The index is rewritten (atomically) after every
finished cell (at most once a second), so an interrupted run leaves a consistent directory.
"""
from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import dataclass, replace

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from certifier.door import __version__, key_id, load_envelope, read_unverified, sign
from sigmacert.atlas.cells import Cell
from sigmacert.atlas.heatmap import render
from sigmacert.atlas.index import cell_of, certified_entry, failed_entry, index_document, pending_entry, summary
from sigmacert.atlas.store import AtlasStore, sha256
from sigmacert.atlas.work import certify_cell, verify_certificate
from sigmacert.files import write_atomic

MAX_SUBMISSIONS = 3   # of one cell whose workers keep dying (each submission survives several deaths)
TICK_SECONDS = 1.0    # the progress bar is redrawn at least this often
INDEX_SECONDS = 1.0   # the index is rewritten at most this often while cells finish, and at the end
HEATMAP = "heatmap.svg"


@dataclass(frozen=True)
class _Job:
    """What one future computes: a cell's certificate ("certify") or a replay of its file ("verify")."""
    cell: Cell
    kind: str
    submission: int = 1
    data: bytes | None = None


class _Silent:
    def cell(self, entry, counts):
        pass

    def note(self, text):
        pass

    def tick(self, counts):
        pass


def public_pem(key) -> bytes:
    return key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)


def sign_predicate(predicate: dict, key) -> bytes:
    """The signed DSSE envelope of a worker's predicate (the subject is the claim), as written."""
    return sign(predicate, key)[0] + b"\n"


def run_atlas(client, cells: list[Cell], *, scheme: str, key, out_dir: str, progress=None) -> dict:
    """Certify every cell on `client` (a distributed.Client); return the final index document.

    `key` (an Ed25519 private key) stays in this process: the workers receive cell parameters,
    certificate bytes and the public key only.
    """
    from distributed import KilledWorker, wait

    store = AtlasStore(out_dir)
    pem = public_pem(key)
    store.prepare(pem)
    previous = store.previous_costs()
    progress = progress or _Silent()
    entries = {c: pending_entry(c, scheme) for c in cells}
    jobs: dict = {}
    t0 = time.monotonic()
    written = [t0]  # when the index was last written

    def submit(job: _Job) -> None:
        name = f"atlas-{job.kind}-{job.cell.name}-{uuid.uuid4().hex[:12]}"
        if job.kind == "verify":
            fut = client.submit(verify_certificate, job.data, pem, key=name, pure=False)
        else:
            c = job.cell
            kind = () if c.param is None else (c.kind, c.param)   # tv cells: the call they always had
            fut = client.submit(certify_cell, c.steps, c.epochs, c.target, scheme, *kind, key=name, pure=False)
        jobs[fut] = job

    def finish(entry: dict) -> None:
        entries[cell_of(entry)] = entry
        progress.cell(entry, summary(list(entries.values())))

    def on_verify(job: _Job, fut) -> None:
        cell = job.cell
        if fut.status == "finished":
            verdict = fut.result()
        else:
            verdict = {"accepted": False, "reason": "not replayed", "detail": str(fut.exception())}
        if verdict["accepted"]:
            predicate = read_unverified(load_envelope(job.data))["predicate"]  # these exact bytes were accepted
            if cell.matches(predicate["claim"], scheme):
                sha = sha256(job.data)
                finish(certified_entry(cell, scheme, predicate, sha, previous.get(sha, {}), reused=True))
                return
            verdict = {"reason": "other claim", "detail": "the certificate is about another cell, kind or scheme"}
        progress.note(f"{cell.label()}: existing certificate not accepted ({verdict['reason']}: "
                      f"{verdict['detail']}); certifying it again")
        submit(_Job(cell, "certify"))

    def on_certify(job: _Job, fut) -> None:
        cell = job.cell
        if fut.status != "finished":
            err = fut.exception() if fut.status == "error" else None
            if isinstance(err, KilledWorker) and job.submission < MAX_SUBMISSIONS:
                progress.note(f"{cell.label()}: the workers running it died; resubmitted")
                submit(replace(job, submission=job.submission + 1))
                return
            reason = (f"the workers running this cell died {MAX_SUBMISSIONS} times over (out of memory?)"
                      if isinstance(err, KilledWorker) else f"{type(err).__name__}: {err}" if err else fut.status)
            finish(failed_entry(cell, scheme, reason, None))
            return
        r = fut.result()
        if not r["ok"]:
            finish(failed_entry(cell, scheme, r["reason"], r["seconds"]))
        elif not cell.matches(r["predicate"]["claim"], scheme):
            finish(failed_entry(cell, scheme, "a worker returned a predicate about another claim (not signed)",
                                r["seconds"]))
        else:
            sha = store.write_certificate(cell, sign_predicate(r["predicate"], key))
            finish(certified_entry(cell, scheme, r["predicate"], sha, r, reused=False))

    def document() -> dict:
        return index_document(list(entries.values()), scheme=scheme, keyid=key_id(key.public_key()),
                              version=__version__, seconds=time.monotonic() - t0, heatmap=HEATMAP)

    try:
        for cell in cells:
            data = store.existing(cell)
            submit(_Job(cell, "verify", data=data) if data is not None else _Job(cell, "certify"))
        store.write_index(document())
        while jobs:
            try:
                done, _ = wait(list(jobs), timeout=TICK_SECONDS, return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = ()
            for fut in done:
                job = jobs.pop(fut)
                (on_verify if job.kind == "verify" else on_certify)(job, fut)
            if done and time.monotonic() - written[0] >= INDEX_SECONDS:
                store.write_index(document())
                written[0] = time.monotonic()
            progress.tick(summary(list(entries.values())))
    finally:
        if jobs:
            with contextlib.suppress(Exception):  # best effort: the cluster may be gone already
                client.cancel(list(jobs))
        final = document()
        store.write_index(final)
        _write_heatmap(store, list(entries.values()), scheme)
    return final


def _write_heatmap(store: AtlasStore, entries: list[dict], scheme: str) -> None:
    write_atomic(store.path(HEATMAP), render(entries, scheme))
