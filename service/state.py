"""The running service: one explicit state object that every router reads (app.state.service).

    state = ServiceState.open(config)   # lifespan start: lock, archive, keys, workers, lanes
    state.close()                       # lifespan end

Opening takes an exclusive lock on the database, re-queues jobs left `running` by a
previous (killed) server, records the public half of the signing key (older keys become
retired) and starts the workers. The private key stays out of this process: only the
workers read it (its public half is read by a short child, service.worker.public_of).
Routers get the state with `Depends(get_state)`; a new feature adds a
field here and a router in service/routes.
"""
from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from fastapi import Depends, Header, Request

from certifier.door import key_id, load_public
from service.auth import Caller, Tokens
from service.compute import Lane, SigmaService, Verifications
from service.config import Config
from service.errors import ApiError
from service.log import CertificateLog
from service.ratelimit import RateLimiter
from service.reports import Reports
from service.store import Store
from service.worker import WorkerPool, public_of


def lock_database(db: str) -> int:
    """An exclusive flock on DB.lock (a file descriptor); RuntimeError if another server holds it."""
    fd = os.open(db + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RuntimeError(f"another sigmacert server is using {db}") from None
    return fd


def _public_pem(public_key) -> str:
    return public_key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()


@dataclass
class ServiceState:
    config: Config
    tokens: Tokens
    store: Store
    keyid: str                    # the active signing key
    workers: WorkerPool           # certification jobs (start, stop, alive)
    sigma: SigmaService           # GET /v1/sigma
    verifications: Verifications  # POST /v1/verify
    reports: Reports              # GET /v1/certificates/{id}/report and its plots
    limiter: RateLimiter          # POST /v1/verify, per client
    lanes: tuple[Lane, ...]
    lock: int
    log: CertificateLog           # GET /v1/log/...: every issued certificate, RFC 9162

    @classmethod
    def open(cls, config: Config) -> ServiceState:
        tokens = Tokens(config.tokens)
        lock = lock_database(config.db)
        try:
            store = Store(config.db)
            for pem_path in config.retired_keys:
                pub = load_public(pem_path)
                store.add_retired_key(key_id(pub), _public_pem(pub))
            keyid, pem = public_of(config.key)  # read in a child: the private key never enters this process
            store.set_active_key(keyid, pem)
            n = store.requeue()
        except BaseException:
            os.close(lock)
            raise
        if n:
            print(f"sigmacert serve: {n} job(s) left running by a previous server re-queued", flush=True)
        workers = WorkerPool(store, config.db, config.key, config.workers, keyid, config.job,
                             cluster=config.cluster)
        workers.start()
        sigma_lane, verify_lane, report_lane = Lane("sigma", 1, 8), Lane("verify", 1, 4), Lane("report", 1, 8)
        return cls(config=config, tokens=tokens, store=store, keyid=keyid, workers=workers,
                   sigma=SigmaService(store, sigma_lane, config.job, config.sigma_wait),
                   verifications=Verifications(verify_lane, config.verify),
                   reports=Reports(store, report_lane, config.report, config.report_wait, config.report_entry),
                   limiter=RateLimiter(config.verify_per_minute, config.verify_burst),
                   lanes=(sigma_lane, verify_lane, report_lane), lock=lock,
                   log=CertificateLog(config.db, config.key, keyid))

    def close(self) -> None:
        self.workers.stop()
        for lane in self.lanes:
            lane.shutdown()
        self.log.close()
        os.close(self.lock)


async def get_state(request: Request) -> ServiceState:
    """The state (async: FastAPI then resolves it in the event loop, without a thread hop)."""
    return request.app.state.service


def _who(state: ServiceState, authorization: str | None) -> Caller | None:
    if state.tokens.problem is not None:  # fail closed, and say so (the log has the details)
        raise ApiError(401, "no token is accepted now: the server's tokens file is invalid (its operator "
                            "is told in the server log)", {"WWW-Authenticate": "Bearer"})
    return state.tokens.check(authorization)


def caller(authorization: str | None = Header(None, include_in_schema=False),
           state: ServiceState = Depends(get_state)) -> Caller:
    """Who presented a valid bearer token (401 without one)."""
    if state.tokens.path is None or (not state.tokens.configured and state.tokens.problem is None):
        raise ApiError(401, "this server has no API tokens (start it with --tokens FILE; "
                            "create one with `sigmacert token create`)", {"WWW-Authenticate": "Bearer"})
    who = _who(state, authorization)
    if who is None:
        raise ApiError(401, "missing or invalid bearer token", {"WWW-Authenticate": "Bearer"})
    return who


def viewer(authorization: str | None = Header(None, include_in_schema=False),
           state: ServiceState = Depends(get_state)) -> Caller | None:
    """The caller when a valid token is presented, else None (a public view)."""
    if not authorization or state.tokens.path is None:
        return None
    try:
        return _who(state, authorization)
    except ApiError:
        return None
