"""The key holder: one short process per signature that replays before it signs (docs/service.md, "Trust model").

    out = sign_job(key_path, keyid, request, predicate, budget, keep_going=heartbeat)   # an Outcome
    out.result == {"envelope": TEXT, "keyid": HEX}  or  {"refused": ONE LINE}

`python -m service.signer TASK MEMORY PARENT` (service.sandbox's protocol) is the only process of the
service that reads the private key, and it does nothing else: no database, no network, no computation of
its own. A worker (service.worker) never holds the key; it hands the signer the request and the unsigned
predicate its job returned, computed here or on a Dask cluster alike. The signer

1. checks that the predicate's claim is the one requested and its bound meets the target (`matches_request`),
2. builds the Statement and has the independent verifier replay it (verifier.replay_statement, in a limited
   child of its own: service.tasks.replay_statement, under the job's budget and the verifier's cost model),
3. only when the replay ACCEPTs, reads the key, checks it is the key the server publishes, and signs the
   Statement it replayed, byte for byte,
4. spools the envelope (service.spool) before it says a word of it: a job is signed once. A job with a
   spooled envelope (its first run was signed, then the server died before the database heard of it) gets
   that envelope back, and nothing is signed again.

The replay runs in a grandchild so that the predicate's arithmetic never shares an address space with the
key; the key is read only after the replay accepted. A signer killed by its worker (job cancelled or lost)
takes the replay with it (PR_SET_PDEATHSIG).
"""
from __future__ import annotations

import base64
import hashlib
import sys
import time

from certifier.door import (
    RANDOM_ALLOCATION,
    canonical_json,
    claim_subject,
    key_id,
    load_private,
    sign_head,
    sign_statement,
    statement,
)
from certifier.errors import SigmacertError
from certifier.params import parse_decimal
from service import spool
from service.job import request_run
from service.sandbox import Budget, Outcome, child, run
from service.store import request_key

GRACE = 30.0   # seconds the signer may take beyond its replay's budget (start-up, the signature, the spool)
SPOOL_TRIES = 20.0   # seconds the signer keeps trying to spool an envelope while the disk refuses


def matches_request(req: dict, outcome: dict) -> str | None:
    """Why a certified predicate must not be signed for `req` (None: it may).

    The key signs only a claim that is the one requested and a bound that meets the target, read back from
    the predicate itself."""
    pred = outcome.get("predicate")
    if not isinstance(pred, dict) or not isinstance(pred.get("claim"), dict):
        return "no predicate"
    claim = dict(pred["claim"])
    claim.setdefault("scheme", RANDOM_ALLOCATION)  # formats v1 and v2 name no scheme: random allocation
    run = request_run(req)   # format v5 (a run in stages): the claim lists the stages in order, no steps/epochs
    why = run.pick(lambda steps, epochs, scheme: None, lambda stages: _stages_differ(req["stages"], claim))
    if why:
        return why
    want = run.pick(lambda steps, epochs, scheme: {"steps": steps, "epochs": epochs},
                    lambda stages: {"steps": None, "epochs": None})
    want.update(target=req["target"], scheme=run.scheme)
    for k in ("sigma", "iterations"):
        if req.get(k) is not None:
            want[k] = req[k]
    for k, v in want.items():
        if claim.get(k) != v:
            return f"claim.{k} is {claim.get(k)!r}, the request asked for {v!r}"
    kind = claim.get("kind", {"name": "tv"})          # formats v1-v3 state no kind: tv
    if kind != (req.get("kind") or {"name": "tv"}):
        return f"claim.kind is {kind!r}, the request asked for {req.get('kind') or {'name': 'tv'}!r}"
    if ("audit" in req) != ("audit" in pred):          # an audit (format v6) is signed whatever its verdict
        return "an audit request needs an audit predicate, and only an audit request gets one"
    if "audit" in req:
        return None if claim.get("source") == req["audit"]["source"] else "claim.source is not the requested one"
    try:
        upper = pred["upper"]["bound"] if isinstance(pred.get("upper"), dict) else pred["bound"]  # v4: upper.bound
        if parse_decimal("bound", upper) > parse_decimal("target", claim["target"]):
            return f"bound {upper} exceeds the target {claim['target']}"
    except (KeyError, TypeError, ValueError):
        return "no readable bound"
    return None


def _stages_differ(asked: list, claim: dict) -> str | None:
    """Why a v5 claim's run is not the requested one (None: it is): both as (M_s, E_s, sigma_s) at the claim's sigma."""
    got, sigma = claim.get("stages"), claim.get("sigma")
    try:   # a stage's own sigma (an optional key of format v5) must be the claim's
        run = [(st["steps"], st["epochs"], st.get("sigma", sigma)) for st in got]
    except (KeyError, TypeError, AttributeError):
        return "claim.stages is not a stage list"
    want = [(st["steps"], st["epochs"], sigma) for st in asked]
    return None if run == want else f"claim.stages is {got!r}, the request asked for {asked!r} at one sigma"


def job_statement(req: dict, pred: dict) -> dict:
    """The Statement a job's predicate is signed as: the request's subject, else the claim itself."""
    s = req.get("subject")
    subject = {"name": s["name"], "digest": {"sha256": s["sha256"]}} if s else claim_subject(pred["claim"])
    return statement(subject, pred)


# ----------------------------------------------------------------------------- in the worker (no key)

def sign_job(key_path: str, keyid: str, req: dict, predicate: dict, budget: Budget, *, keep_going=None,
             on_progress=None, job: str | None = None, spool_dir: str | None = None,
             record: dict | None = None) -> Outcome:
    """Have a signer process replay and sign a job's predicate: an Outcome whose result is {"envelope",
    "keyid"} or {"refused": reason}. The replay gets `budget`; the signer GRACE seconds more. With a
    `spool_dir` and a `job` id the envelope is spooled, with `record` (the fields the worker records), before
    it is returned, and a job already spooled gets its spooled envelope."""
    payload = {"key": key_path, "keyid": keyid, "request": req, "predicate": predicate,
               "memory": budget.memory, "seconds": budget.seconds, "job": job, "spool": spool_dir,
               "record": record or {}}
    return run("job", payload, Budget(budget.memory, budget.seconds + GRACE), entry="service.signer",
               keep_going=keep_going, on_progress=on_progress)


# ----------------------------------------------------------------------------- in the signer (the key)

def _load_key(path: str, keyid: str):
    """The private key, if it is still the one the server publishes; else a one-line refusal."""
    try:
        key = load_private(path)
    except SigmacertError as err:
        return None, f"the issuer key cannot be read: {err}"
    if key_id(key.public_key()) != keyid:  # the key file changed under a running server
        return None, (f"{path} is no longer the key this server publishes ({keyid[:16]}...); restart the server "
                      "to rotate keys")
    return key, None


def signer_job(payload: dict, progress) -> dict:
    """Check, replay, then sign one job's predicate (the module docstring's steps 1-3)."""
    req, pred = payload["request"], payload["predicate"]
    why = matches_request(req, {"predicate": pred})
    if why is not None:
        return {"refused": f"not signed: {why}"}
    try:
        stmt = job_statement(req, pred)
        body = canonical_json(stmt)
    except (KeyError, TypeError, ValueError, RecursionError) as err:
        return {"refused": f"not signed: malformed predicate ({type(err).__name__})"}
    if payload.get("spool") and not spool.job_ok(payload.get("job")):   # before any replay: nothing is signed
        return {"refused": f"not signed: the signature could not be spooled (not a job id: {payload.get('job')!r})"}
    spooled = _spooled(payload)
    if spooled is not None:
        return spooled
    progress("replaying", 0.0, 0.0)
    budget = Budget(payload["memory"], payload["seconds"])
    out = run("replay", {"statement": base64.b64encode(body).decode(), "max_memory": budget.memory,
                         "max_seconds": budget.seconds}, budget)
    if out.result is None:
        return {"refused": f"not signed: the independent replay failed: {out.reason}",
                "limit": out.failure in ("memory", "seconds")}
    if out.result.get("accepted") is not True:
        return {"refused": f"not signed: the independent replay rejected the predicate: {out.result.get('reason')}: "
                           f"{str(out.result.get('detail'))[:300]}"}
    progress("signing", 100.0, out.seconds)
    key, why = _load_key(payload["key"], payload["keyid"])
    if key is None:
        return {"refused": f"not signed: {why}"}
    envelope = sign_statement(stmt, key)   # the canonical bytes of `stmt` are `body`, the bytes replayed
    why = _spool(payload, envelope.decode("utf-8"))
    if why is not None:
        return {"refused": f"not signed: {why}"}
    # the operator's audit line (the server's log): what was signed, after which replay
    digest = hashlib.sha256(envelope).hexdigest()
    print(f"sigmacert signer: signed job={payload.get('job', '-')} envelope sha256={digest} after the replay "
          f"accepted it ({out.seconds:.2f} s)", file=sys.stderr, flush=True)
    return {"envelope": envelope.decode("utf-8"), "keyid": payload["keyid"],
            "replay_seconds": round(out.seconds, 3)}


def _spooled(payload: dict) -> dict | None:
    """The answer for a job whose envelope is spooled already (signed once, by this key), else None."""
    if not payload.get("spool"):   # no spool (a direct call): nothing to look up or write
        return None
    prior = spool.get(payload["spool"], payload["job"], payload["request"])
    if prior is None or prior.get("keyid") != payload["keyid"]:
        return None
    digest = hashlib.sha256(prior["envelope"].encode()).hexdigest()
    print(f"sigmacert signer: job={payload['job']} was signed before (envelope sha256={digest}); its spooled "
          "envelope is returned, nothing is signed again", file=sys.stderr, flush=True)
    return {"envelope": prior["envelope"], "keyid": prior["keyid"], "spooled": True}


def _spool(payload: dict, envelope: str) -> str | None:
    """Spool the job's envelope durably, trying for SPOOL_TRIES seconds while the disk refuses; why not, or
    None. An envelope that cannot be spooled is not handed out: it is as if it had never been made."""
    if not payload.get("spool"):   # no spool (a direct call): nothing to look up or write
        return None
    entry = {**payload.get("record", {}), "envelope": envelope, "keyid": payload["keyid"],
             "request": request_key(payload["request"])}
    deadline = time.monotonic() + SPOOL_TRIES
    while True:
        try:
            spool.put(payload["spool"], payload["job"], entry)
            return None
        except OSError as err:
            if time.monotonic() > deadline:
                return f"the signature could not be spooled ({err}); it was not issued"
            time.sleep(0.5)


def signer_head(payload: dict, progress) -> dict:
    """Sign the log's tree head (size, root) now (service.log; docs/release.md "The log")."""
    key, why = _load_key(payload["key"], payload["keyid"])
    if key is None:
        return {"refused": why}
    return {"head": sign_head(int(payload["size"]), bytes.fromhex(payload["root"]), key.sign, payload["keyid"])}


SIGNER_TASKS = {"job": signer_job, "head": signer_head}

if __name__ == "__main__":
    sys.exit(child(sys.argv[1:], SIGNER_TASKS))
