"""JSON views of archive rows: what the API shows of a job and of a key."""
from __future__ import annotations

import datetime as _dt
import json

from service.job import request_run


def iso(t: float | None) -> str | None:
    """A UNIX time as `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds)."""
    if t is None:
        return None
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def job_view(row: dict, full: bool = True, viewer_owns: bool = False) -> dict:
    """A job: its request and status; `full` adds progress, attempts and the signed envelope. Who
    requested it and the subject's name are shown only to its team (`viewer_owns`); the certificate
    itself (the envelope) is public and names its subject."""
    req = json.loads(row["request"])
    if not viewer_owns and isinstance(req.get("subject"), dict):
        req["subject"] = {"sha256": req["subject"].get("sha256")}
    run = request_run(req)                      # a run in stages (format v5): no single M, epochs the total
    out = {"id": row["id"], "status": row["status"], "request": req,
           "steps": run.pick(lambda steps, epochs, scheme: row["steps"], lambda stages: None),
           "epochs": row["epochs"], "scheme": req.get("scheme", "random-allocation"),
           "kind": req.get("kind", {"name": "tv"}), "target": row["target"], "sigma": row["sigma"],
           "created_at": iso(row["created_at"]), "finished_at": iso(row["finished_at"])}
    if req.get("iterations") is not None:
        out["iterations"] = req["iterations"]
    if "audit" in req:                          # an audit of a claim (routes/audits.py): `bound` is its verdict
        out["type"] = "audit"
    out.update(run.pick(lambda steps, epochs, scheme: {}, lambda stages: {"stages": req["stages"]}))
    if row.get("bound") is not None:
        out["bound"] = row["bound"]
    if row.get("keyid"):
        out["keyid"] = row["keyid"]
    if row["status"] in ("failed", "cancelled"):
        out["reason"] = row["reason"]
    if not full:
        return out
    out.update(updated_at=iso(row["updated_at"]), attempts=row["attempts"])
    if viewer_owns:
        out.update(requested_by=row["requested_by"], team=row.get("team") or row["requested_by"])
    if row["status"] == "running":
        out.update(stage=row["stage"], percent=row["percent"], elapsed=row["elapsed"])
    if row["status"] == "done":
        out["elapsed"] = row["elapsed"]
        out["envelope"] = json.loads(row["envelope"])
    return out


def envelope_file(row: dict) -> bytes:
    """The certificate file of a done job, as downloaded (its SHA-256 is the one its report shows)."""
    return row["envelope"].encode() + b"\n"


def key_view(row: dict) -> dict:
    """An issuer key: its PEM and whether it signs now (active) or did before (retired)."""
    return {"keyid": row["keyid"], "public_pem": row["public_pem"],
            "status": "retired" if row["retired_at"] else "active",
            "added_at": iso(row["added_at"]), "retired_at": iso(row["retired_at"])}
