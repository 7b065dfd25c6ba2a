"""`sigmacert serve` (the certification service) and `sigmacert token create` (docs/service.md)."""
from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import re
import socket
import sqlite3
import sys

from certifier.door import key_id, keygen, load_public
from certifier.params import ParameterError, parse_count
from service.auth import TokenFileError, Tokens, create_token, digest, load_hashes
from service.cluster import Cluster, check
from service.sandbox import Budget
from service.store import Store
from service.worker import public_of
from sigmacert.cli import CliError


def _cli_error(msg: str, code: int = 2):
    return CliError(msg, code)


def run_token_create(args) -> int:
    try:
        token = create_token(args.tokens, args.name, getattr(args, "team", None), getattr(args, "admin", False))
    except TokenFileError as err:
        raise _cli_error(str(err)) from None
    except OSError as err:
        raise _cli_error(f"cannot write {args.tokens}: {err.strerror}") from None
    if args.json:  # the token is shown this once either way: only its SHA-256 is stored
        h = digest(token)
        caller = next(c for d, c in reversed(load_hashes(args.tokens)) if d == h)
        print(json.dumps({"token": token, "name": caller.name, "team": caller.team, "admin": caller.admin,
                          "sha256": h.hex(), "tokens": os.path.abspath(args.tokens)}))
    else:
        print(token)  # the only time it is shown: only its SHA-256 is stored
    return 0


def _active_keyid(db: str) -> str | None:
    """The active key id this database records (None: no database or no key yet); read only."""
    if not os.path.exists(db):
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as c:
            row = c.execute("SELECT keyid FROM keys WHERE retired_at IS NULL").fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def _default_key(db: str) -> str:
    """DB_DIR/issuer-key/private.pem: created when missing; an existing one is used only when this
    database already records it as its active key (a key in a shared directory is never picked up)."""
    d = os.path.join(os.path.dirname(db), "issuer-key")
    path = os.path.join(d, "private.pem")
    if not os.path.lexists(path):
        kid = keygen(d)
        print(f"sigmacert serve: created issuer key {kid} in {d} (private.pem is secret)", file=sys.stderr)
        return path
    pub = os.path.join(d, "public.pem")
    kid = key_id(load_public(pub)) if os.path.exists(pub) else None
    if kid is None or kid != _active_keyid(db):
        raise _cli_error(f"an issuer key exists at {path} that {db} did not create; pass --key {path} to sign "
                         "with it, or a --db in another directory")
    return path


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _budget(memory: str | None, seconds: str | None, kind: str, default):
    """--KIND-memory and --KIND-seconds over the defaults of service.config."""
    from service.config import parse_memory, parse_seconds
    return Budget(parse_memory(f"--{kind}-memory", memory) if memory is not None else default.memory,
                  parse_seconds(f"--{kind}-seconds", seconds) if seconds is not None else default.seconds)


def _bind(host: str, port: int):
    """The listening socket, bound before anything is created: a busy port is one line, exit 2."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as err:
        sock.close()
        raise _cli_error(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    sock.set_inheritable(True)
    return sock


class _Redact(logging.Filter):
    """Access-log lines without secrets: a token sent in the query string (it belongs in the
    Authorization header) is replaced by [redacted]."""
    SECRET = re.compile(r"(?i)(sct_[A-Za-z0-9_\-]+)|((?:^|[?&;])(?:token|access_token|api_key|apikey|auth|"
                        r"authorization|bearer)=)[^&;#\s]*")

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(self.clean(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.msg, str):
            record.msg = self.clean(record.msg)
        return True

    @classmethod
    def clean(cls, text: str) -> str:
        return cls.SECRET.sub(lambda m: "sct_[redacted]" if m.group(1) else m.group(2) + "[redacted]", text)


def run_serve(args) -> int:
    try:
        import uvicorn

        from service.app import create_app
        from service.config import JOB, VERIFY, Config
        from service.state import ServiceState, lock_database
        from service.validate import Limits
    except ImportError as err:
        raise _cli_error(f"the service needs the 'service' extra (pip install 'sigmacert[service]'): {err}") from None


    port = int(parse_count("port", args.port, 65535)) if args.port != "0" else 0
    workers = parse_count("workers", args.workers, 64)
    limits = Limits(max_steps=parse_count("max-steps", args.max_steps, 10**7),
                    max_epochs=parse_count("max-epochs", args.max_epochs, 10**6))
    db = os.path.abspath(args.db)
    rate = float(parse_count("verify-rate", args.verify_rate, 10**6))
    burst = parse_count("verify-burst", args.verify_burst, 10**6)
    job = _budget(args.job_memory, args.job_seconds, "job", JOB)
    verify = _budget(args.verify_memory, args.verify_seconds, "verify", VERIFY)
    predicted = float(parse_count("max-predicted-seconds", args.max_predicted_seconds, 10**7))
    max_queued = parse_count("max-queued", args.max_queued, 10**6)
    quota = parse_count("team-quota", args.team_quota, 10**6)
    cluster = None
    if args.scheduler:
        cluster = Cluster.parse(args.scheduler, args.scheduler_ca, args.scheduler_cert, args.scheduler_key,
                                args.insecure_scheduler)
        check(cluster)  # unreachable, refused TLS, or workers of another version: one line, before anything starts
    if not os.path.isdir(os.path.dirname(db)):
        raise ParameterError(f"database directory does not exist: {os.path.dirname(db)}")
    if args.tokens:
        if not os.path.exists(args.tokens):
            raise ParameterError(f"no such tokens file: {args.tokens} (create one with "
                                 f"`sigmacert token create --tokens {args.tokens}`)")
        try:
            Tokens(args.tokens)
        except (TokenFileError, OSError) as err:
            raise _cli_error(f"bad tokens file: {err}") from None
    for path in args.retired_key or []:
        load_public(path)
    if args.key:  # a missing, unreadable or group-readable key: one line, read by a child (never here)
        public_of(os.path.abspath(args.key))
    sock = _bind(args.host, port)  # a busy port: one line, before any file is created
    try:
        os.close(lock_database(db))  # one server per database: refused before any key or file is created
    except RuntimeError as err:
        raise _cli_error(str(err)) from None
    except OSError as err:
        raise _cli_error(f"cannot use the database {db}: {err.strerror or err}") from None
    key = os.path.abspath(args.key) if args.key else _default_key(db)
    if not args.key:
        public_of(key)
    try:
        Store(db).ping()  # a read-only or broken database: one line, before the server starts
    except (sqlite3.Error, OSError) as err:
        raise _cli_error(f"cannot write the database {db}: {str(err).splitlines()[0] if str(err) else err}") from None
    if not args.tokens:
        print("sigmacert serve: no --tokens file: certificate requests and cancellations are refused",
              file=sys.stderr)
    if not _is_loopback(args.host):
        print(f"sigmacert serve: WARNING listening on {args.host}: bearer tokens travel in clear text; "
              "put a TLS reverse proxy in front", file=sys.stderr)
    cfg = Config(db=db, key=key, tokens=os.path.abspath(args.tokens) if args.tokens else None,
                 workers=workers, retired_keys=[os.path.abspath(p) for p in args.retired_key or []],
                 limits=limits, verify_per_minute=rate, verify_burst=burst, job=job, verify=verify,
                 report_entry="sigmacert.report.served", cluster=cluster, max_predicted_seconds=predicted,
                 max_queued=max_queued, max_queued_per_team=quota)
    try:
        state = ServiceState.open(cfg)  # lock, archive, the key's public half (read by a child), workers
    except RuntimeError as err:
        raise _cli_error(str(err)) from None
    except (sqlite3.Error, OSError) as err:
        raise _cli_error(f"cannot start: {type(err).__name__}: {err}") from None
    app = create_app(cfg, state)
    server = uvicorn.Server(uvicorn.Config(app, log_level=args.log_level, proxy_headers=False, server_header=False,
                                           timeout_graceful_shutdown=10, access_log=not args.no_access_log))
    logging.getLogger("uvicorn.access").addFilter(_Redact())
    server.run(sockets=[sock])
    return 0


def register(sub) -> None:
    p = sub.add_parser("serve", help="run the certification service (HTTP API, job queue, archive)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: loopback only)")
    p.add_argument("--port", default="8080", help="TCP port (default 8080)")
    p.add_argument("--db", default="sigmacert.db", metavar="PATH",
                   help="SQLite archive and queue (default ./sigmacert.db)")
    p.add_argument("--key", metavar="PRIVATE.pem",
                   help="issuer signing key, mode 0600 (default: DB_DIR/issuer-key/private.pem, created if missing; "
                        "an existing one only if this database created it)")
    p.add_argument("--retired-key", action="append", metavar="PUBLIC.pem",
                   help="an older issuer public key to list (and verify against) as retired; repeatable")
    p.add_argument("--tokens", metavar="FILE", help="bearer token hashes (from `sigmacert token create`)")
    p.add_argument("--workers", default="1",
                   help="certification worker processes, each one job at a time (default 1); with --scheduler: "
                        "the jobs in flight on the cluster at once")
    p.add_argument("--scheduler", metavar="tls://HOST:PORT",
                   help="compute certification jobs on this Dask cluster (SQLite stays the archive and queue; "
                        "the key stays here and signs only what the independent verifier replayed)")
    p.add_argument("--scheduler-ca", metavar="CA.pem", help="tls:// scheduler: the CA of the cluster's certificates")
    p.add_argument("--scheduler-cert", metavar="CERT.pem", help="tls:// scheduler: this service's client certificate")
    p.add_argument("--scheduler-key", metavar="KEY.pem", help="tls:// scheduler: the client certificate's key")
    p.add_argument("--insecure-scheduler", action="store_true",
                   help="accept a plain tcp:// scheduler (unauthenticated, unencrypted: loopback tests only)")
    p.add_argument("--max-predicted-seconds", default="900",
                   help="refuse (422) a job the certifier's cost model predicts longer (default 900)")
    p.add_argument("--max-queued", default="100", help="jobs queued or running at once (default 100; 429 beyond)")
    p.add_argument("--team-quota", default="10", help="jobs queued or running per team (default 10; 429 beyond)")
    p.add_argument("--max-steps", default="10000", help="largest M accepted (default 10000)")
    p.add_argument("--max-epochs", default="1000", help="largest E accepted (default 1000)")
    p.add_argument("--job-memory", metavar="SIZE",
                   help="address space of each job process, e.g. 512M, 4G (default 4G); over it the job fails")
    p.add_argument("--job-seconds", metavar="S",
                   help="wall-clock limit of each job; at it the job process is killed (default 3600)")
    p.add_argument("--verify-memory", metavar="SIZE",
                   help="address space of each /v1/verify process (default 2G)")
    p.add_argument("--verify-seconds", metavar="S",
                   help="wall-clock limit of each /v1/verify (default 120)")
    p.add_argument("--verify-rate", default="30", help="verifications per minute per client (default 30)")
    p.add_argument("--verify-burst", default="10", help="verification burst per client (default 10)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.add_argument("--no-access-log", action="store_true", help="do not log each request")
    p.set_defaults(run=run_serve)

    p = sub.add_parser("token", help="API bearer tokens for `sigmacert serve`")
    tsub = p.add_subparsers(dest="token_command", metavar="ACTION", parser_class=type(p))
    tsub.required = True
    c = tsub.add_parser("create", help="print a fresh token once; append only its SHA-256 (and name) to FILE")
    c.add_argument("--tokens", required=True, metavar="FILE", help="tokens file (created with mode 0600)")
    c.add_argument("--name", help="who the token is for (default: token-<time>)")
    c.add_argument("--team", help="the team that owns the jobs this token submits (default: the name)")
    c.add_argument("--admin", action="store_true", help="an admin token: may cancel any team's job")
    c.add_argument("--json", action="store_true", help="one JSON object: token, name, sha256, tokens file")
    c.set_defaults(run=run_token_create)
