"""bench_vs_accountant's children (the accountant, the certifier) end when the benchmark does: a
parent killed by SIGKILL (no exit hook runs) or stopped by SIGTERM leaves no child running."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PARENT = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("bva", sys.argv[1])
bva = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bva)
bva._exit_on_signals()

def child(path):
    import os, signal
    with open(path + ".tmp", "w") as fh:  # its pid, and whether SIGTERM kills it at once (not the parent's handler)
        fh.write(f"{os.getpid()} {int(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)}")
    os.replace(path + ".tmp", path)
    time.sleep(120)

bva._child(child, (sys.argv[2],))
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def _child_pid(path: Path, deadline: float) -> int:
    while not path.exists():
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.05)
    pid, default_term = path.read_text().split()
    assert default_term == "1", "the child kept the parent's SIGTERM handler (a terminate() would wait for it)"
    return int(pid)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to see the child")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_benchmark_leaves_no_child(tmp_path, sig):
    pidfile = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(ROOT / "benchmarks" / "bench_vs_accountant.py"),
                               str(pidfile)])
    try:
        child = _child_pid(pidfile, time.monotonic() + 60)
        assert _alive(child)
        os.kill(parent.pid, sig)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), f"child {child} outlived its parent (signal {sig})"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
