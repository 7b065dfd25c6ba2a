"""`sigmacert serve` (the certification service) and `sigmacert token create` (docs/service.md)."""
from __future__ import annotations

import ipaddress
import os
import sys

from certifier.params import ParameterError, parse_count


def _cli_error(msg: str, code: int = 2):
    from sigmacert.cli import CliError
    return CliError(msg, code)


def run_token_create(args) -> int:
    from service.auth import TokenFileError, create_token
    try:
        token = create_token(args.tokens, args.name)
    except TokenFileError as err:
        raise _cli_error(str(err)) from None
    except OSError as err:
        raise _cli_error(f"cannot write {args.tokens}: {err.strerror}") from None
    print(token)  # the only time it is shown: only its SHA-256 is stored
    return 0


def _default_key(db: str) -> str:
    from certifier.certificate.keys import keygen
    d = os.path.join(os.path.dirname(db), "issuer-key")
    path = os.path.join(d, "private.pem")
    if not os.path.exists(path):
        kid = keygen(d)
        print(f"sigmacert serve: created issuer key {kid} in {d} (private.pem is secret)", file=sys.stderr)
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
    from service.sandbox import Budget
    return Budget(parse_memory(f"--{kind}-memory", memory) if memory is not None else default.memory,
                  parse_seconds(f"--{kind}-seconds", seconds) if seconds is not None else default.seconds)


def run_serve(args) -> int:
    try:
        import uvicorn

        from service.app import create_app
        from service.auth import TokenFileError, Tokens
        from service.config import JOB, VERIFY, Config
        from service.state import lock_database
        from service.validate import Limits
    except ImportError as err:
        raise _cli_error(f"the service needs the 'service' extra (pip install 'sigmacert[service]'): {err}") from None
    from certifier.certificate.keys import load_private, load_public

    port = int(parse_count("port", args.port, 65535)) if args.port != "0" else 0
    workers = parse_count("workers", args.workers, 64)
    limits = Limits(max_steps=parse_count("max-steps", args.max_steps, 10**7),
                    max_epochs=parse_count("max-epochs", args.max_epochs, 10**6))
    db = os.path.abspath(args.db)
    rate = float(parse_count("verify-rate", args.verify_rate, 10**6))
    burst = parse_count("verify-burst", args.verify_burst, 10**6)
    job = _budget(args.job_memory, args.job_seconds, "job", JOB)
    verify = _budget(args.verify_memory, args.verify_seconds, "verify", VERIFY)
    scheduler = None
    if args.scheduler:
        from service.cluster import connect, parse_scheduler
        scheduler = parse_scheduler(args.scheduler)
        connect(scheduler).close()  # unreachable, or workers of another version: one line, before anything starts
    if not os.path.isdir(os.path.dirname(db)):
        raise ParameterError(f"database directory does not exist: {os.path.dirname(db)}")
    if args.tokens:
        if not os.path.exists(args.tokens):
            raise ParameterError(f"no such tokens file: {args.tokens} (create one with "
                                 f"`sigmacert token create --tokens {args.tokens}`)")
        try:
            Tokens(args.tokens)
        except (TokenFileError, OSError, UnicodeDecodeError) as err:
            raise _cli_error(f"bad tokens file: {err}") from None
    else:
        print("sigmacert serve: no --tokens file: certificate requests and cancellations are refused",
              file=sys.stderr)
    key = os.path.abspath(args.key) if args.key else _default_key(db)
    load_private(key)  # a bad key fails here, in one line, before anything starts
    for path in args.retired_key or []:
        load_public(path)
    if not _is_loopback(args.host):
        print(f"sigmacert serve: WARNING listening on {args.host}: bearer tokens travel in clear text; "
              "put a TLS reverse proxy in front", file=sys.stderr)
    try:
        os.close(lock_database(db))  # one server per database; the app takes the lock for real at start-up
    except RuntimeError as err:
        raise _cli_error(str(err)) from None
    cfg = Config(db=db, key=key, tokens=os.path.abspath(args.tokens) if args.tokens else None,
                 workers=workers, retired_keys=[os.path.abspath(p) for p in args.retired_key or []],
                 limits=limits, verify_per_minute=rate, verify_burst=burst, job=job, verify=verify,
                 report_entry="sigmacert.report.served", scheduler=scheduler)
    app = create_app(cfg)
    uvicorn.run(app, host=args.host, port=port, log_level=args.log_level, proxy_headers=False,
                server_header=False, timeout_graceful_shutdown=10, access_log=not args.no_access_log)
    return 0


def register(sub) -> None:
    p = sub.add_parser("serve", help="run the certification service (HTTP API, job queue, archive)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: loopback only)")
    p.add_argument("--port", default="8080", help="TCP port (default 8080)")
    p.add_argument("--db", default="sigmacert.db", metavar="PATH",
                   help="SQLite archive and queue (default ./sigmacert.db)")
    p.add_argument("--key", metavar="PRIVATE.pem",
                   help="issuer signing key (default: DB_DIR/issuer-key/private.pem, created if missing)")
    p.add_argument("--retired-key", action="append", metavar="PUBLIC.pem",
                   help="an older issuer public key to list (and verify against) as retired; repeatable")
    p.add_argument("--tokens", metavar="FILE", help="bearer token hashes (from `sigmacert token create`)")
    p.add_argument("--workers", default="1",
                   help="certification worker processes, each one job at a time (default 1); with --scheduler: "
                        "the jobs in flight on the cluster at once")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="compute certification jobs on this Dask cluster (SQLite stays the archive and queue; "
                        "the key stays here and signs)")
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
    c.set_defaults(run=run_token_create)
