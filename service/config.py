"""What a server runs with: paths, workers, request bounds, rate limit and compute limits.

    Config(db=..., key=..., tokens=..., job=Budget(4 << 30, 3600))   # docs/service.md
    Config.from_env()   # `uvicorn --factory service.app:create_app`
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from certifier.params import ParameterError, parse_count
from service.cluster import Cluster
from service.sandbox import Budget
from service.validate import Limits

MAX_ENVELOPE = 4 * 1024 * 1024  # bytes of a certificate sent to /v1/verify
# A job (and an exact sigma) may use 4 GiB of address space for an hour: M=250, E=10 two-sided,
# the largest Table 4 cell, peaks at about 1 GiB and takes about 2 minutes on one core.
JOB = Budget(memory=4 << 30, seconds=3600.0)
# A verification: each committed certificate needs under 200 MiB and 35 s (on a loaded machine).
VERIFY = Budget(memory=2 << 30, seconds=120.0)
# A report: the verifier's replay, then the curves (exact TV numerics) and three matplotlib figures.
REPORT = Budget(memory=2 << 30, seconds=300.0)
_SIZE = re.compile(r"([0-9]{1,7})([MG]?)")


def parse_memory(name: str, text: str) -> int:
    """`512M`, `4G` (MiB, GiB; a bare number is MiB) -> bytes, at least 64 MiB."""
    m = _SIZE.fullmatch(str(text).strip())
    if not m:
        raise ParameterError(f"{name} must be a size such as 512M or 4G, got {text!r}")
    n = int(m.group(1)) << (30 if m.group(2) == "G" else 20)
    if not 64 << 20 <= n <= 1 << 40:
        raise ParameterError(f"{name} must lie in [64M, 1024G], got {text}")
    return n


def parse_seconds(name: str, text: str) -> float:
    """A whole number of seconds in [1, 10^6]."""
    t = str(text).strip()
    if not t.isdigit() or not 1 <= int(t) <= 10**6:
        raise ParameterError(f"{name} must be a whole number of seconds in [1, 1000000], got {text!r}")
    return float(t)


@dataclass
class Config:
    db: str
    key: str
    tokens: str | None = None
    workers: int = 1
    retired_keys: list = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)
    max_body: int = 64 * 1024
    verify_per_minute: float = 30.0
    verify_burst: int = 10
    job: Budget = JOB          # each certification job and each exact sigma
    verify: Budget = VERIFY    # each POST /v1/verify
    sigma_wait: float = 20.0   # seconds a /v1/sigma request waits before answering 202 pending
    report: Budget = REPORT    # each certificate's audit report
    report_entry: str | None = None  # the module whose child renders reports (sigmacert serve names it)
    report_wait: float = 20.0  # seconds a report request waits before answering 202 pending
    cluster: Cluster | None = None  # a Dask cluster: certification jobs compute there (service.cluster)
    max_predicted_seconds: float = 900.0  # admission: a job the certifier's cost model predicts longer is 422
    max_queued: int = 100         # admission: jobs queued or running at once (429 beyond)
    max_queued_per_team: int = 10  # admission: jobs queued or running per team (429 beyond)
    max_resubmits: int = 3        # a failed job is re-queued on an identical request at most this often

    @classmethod
    def from_env(cls) -> Config:
        """SIGMACERT_DB, _KEY, _TOKENS, _WORKERS, _JOB_MEMORY, _JOB_SECONDS, _VERIFY_MEMORY, _VERIFY_SECONDS,
        _REPORT_ENTRY, _SCHEDULER (with _SCHEDULER_CA, _SCHEDULER_CERT, _SCHEDULER_KEY for tls://, or
        _INSECURE_SCHEDULER=1 for tcp://)."""
        env = os.environ.get
        budget = lambda kind, d: Budget(  # noqa: E731
            parse_memory(f"SIGMACERT_{kind}_MEMORY", env(f"SIGMACERT_{kind}_MEMORY", f"{d.memory >> 20}M")),
            parse_seconds(f"SIGMACERT_{kind}_SECONDS", env(f"SIGMACERT_{kind}_SECONDS", f"{d.seconds:.0f}")))
        workers = parse_count("SIGMACERT_WORKERS", env("SIGMACERT_WORKERS", "1"), 64)
        return cls(db=env("SIGMACERT_DB", "sigmacert.db"), key=env("SIGMACERT_KEY", "keys/private.pem"),
                   tokens=env("SIGMACERT_TOKENS"), workers=workers,
                   job=budget("JOB", JOB), verify=budget("VERIFY", VERIFY),
                   report_entry=env("SIGMACERT_REPORT_ENTRY"),
                   cluster=Cluster.parse(env("SIGMACERT_SCHEDULER"), env("SIGMACERT_SCHEDULER_CA"),
                                         env("SIGMACERT_SCHEDULER_CERT"), env("SIGMACERT_SCHEDULER_KEY"),
                                         env("SIGMACERT_INSECURE_SCHEDULER") == "1")
                   if env("SIGMACERT_SCHEDULER") else None)
