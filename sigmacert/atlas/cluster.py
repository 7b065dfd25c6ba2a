"""A Dask client for an atlas: an existing scheduler (any Dask deployment), or a local cluster of
worker processes on loopback, without dashboard, one thread per worker (a cell is one
single-threaded FLINT computation). Workers are spawned, never forked, so no worker process
inherits the driver's memory (and with it the private key)."""
from __future__ import annotations

import contextlib
import logging
import signal
import threading

from certifier.door import __version__
from certifier.errors import ParameterError
from sigmacert.atlas.work import worker_version

CONNECT_TIMEOUT = "20s"
# no dashboard; the scheduler's small HTTP server (health, metrics) on a free loopback port, not 8787
LOCAL_HTTP = {"dashboard": False, "dashboard_address": "127.0.0.1:0"}


def _dask():
    """dask and distributed; also checks for matplotlib (the heatmap) before any work starts."""
    try:
        import dask
        import distributed
        import matplotlib  # noqa: F401
    except ImportError as err:
        raise ParameterError(f"sigmacert atlas needs Dask and matplotlib ({err.name} is missing): "
                             "pip install 'sigmacert[atlas]'") from None
    return dask, distributed


def check_workers(client) -> None:
    """Refuse a cluster whose workers run another certifier version (or cannot import sigmacert)."""
    try:
        versions = client.run(worker_version)
    except Exception as err:  # any failure here means the workers cannot run cells
        raise ParameterError(f"the Dask workers cannot run sigmacert: {type(err).__name__}: {err}") from None
    bad = {w: v for w, v in versions.items() if v != __version__}
    if bad:
        raise ParameterError(f"Dask workers run another sigmacert version than this driver ({__version__}): {bad}")


@contextlib.contextmanager
def _workers_ignore_ctrl_c():
    """Ignore SIGINT while the local workers are spawned: they inherit it, so Ctrl-C at a terminal
    (sent to the whole process group) reaches only the driver, which then closes the cluster."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int):
    """Yield a distributed.Client on `scheduler`, or on a fresh LocalCluster of `workers` processes."""
    dask, distributed = _dask()
    if scheduler:
        try:
            client = distributed.Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, ValueError, TypeError) as err:
            raise ParameterError(f"cannot reach the Dask scheduler at {scheduler}: {err}") from None
        with client:
            check_workers(client)
            yield client
        return
    with dask.config.set({"distributed.worker.multiprocessing-method": "spawn"}), _workers_ignore_ctrl_c():
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None, silence_logs=logging.CRITICAL,
                                           scheduler_kwargs=LOCAL_HTTP)
    with cluster, distributed.Client(cluster) as client:
        yield client
