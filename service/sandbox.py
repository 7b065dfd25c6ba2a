"""Child processes under an address-space limit and a wall-clock limit that kills them.

    outcome = run("certify", request, Budget(memory=4 << 30, seconds=3600),
                  on_progress=report, keep_going=heartbeat)

Every computation of the service (a certification job, an exact sigma, a verification)
runs in its own child: a fresh interpreter, `python -m service.sandbox TASK MEMORY PARENT`,
never a fork, so nothing of the parent's memory (such as the signing key) is in it. Before
it reads its input the child caps its own address space (RLIMIT_AS, soft = hard: nothing
in it can raise the cap again) and arranges to die with its parent. It reads one JSON
object on stdin and writes JSON lines on stdout: `{"progress": {...}}` any number of
times, then `{"result": ...}` or `{"failure": "memory" | "error", "detail": ...}`.

The parent kills the child (SIGKILL) at the deadline or as soon as `keep_going()` (asked
once a second) says no. A signal handled inside the child (SIGALRM) could not interrupt a
long FLINT call or a large allocation; a SIGKILL from outside always ends it. A child that
runs out of address space gets a MemoryError, or a library gives up (GMP/FLINT print "Unable
to allocate memory", FLINT on stdout; OpenBLAS "Memory allocation still failed"); each is
reported as the memory limit.
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import resource
import selectors
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass

TICK = 1.0                # seconds between keep_going() calls
MAX_OUTPUT = 64 << 20     # bytes a child may write on stdout before it is killed
PROGRESS_EVERY = 0.25     # seconds between progress lines from the child (a new stage always goes out)
CHILD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",  # no idle thread stacks or
             "MALLOC_ARENA_MAX": "2"}                               # malloc arenas in the address space
# how an allocation refused under RLIMIT_AS shows in a child's output (Python, GMP/FLINT, OpenBLAS,
# C++, the dynamic loader)
OUT_OF_MEMORY = re.compile(rb"MemoryError|allocate memory|memory allocation|out of memory|bad_alloc|"
                           rb"failed to map segment", re.I)


@dataclass(frozen=True)
class Budget:
    """What one child may use: `memory` bytes of address space, `seconds` of wall clock."""
    memory: int
    seconds: float

    def memory_reason(self) -> str:
        return f"exceeded the memory limit of {self.memory / 2**20:g} MiB"

    def seconds_reason(self) -> str:
        return f"exceeded the wall-clock limit of {self.seconds:g} s"


@dataclass
class Outcome:
    """`result` when the child answered; otherwise `failure` (memory, seconds, stopped, crashed)
    and a one-line `reason`."""
    result: dict | None = None
    failure: str | None = None
    reason: str | None = None
    seconds: float = 0.0


# ----------------------------------------------------------------------------- parent side

def run(task: str, payload: dict, budget: Budget, *, on_progress=None, keep_going=None,
        entry: str = "service.sandbox", grace: float = 0.0) -> Outcome:
    """Run TASK on `payload` in a limited child. Whatever the child does ends in an Outcome;
    OSError only when no child can be started at all. `entry` is the module the child runs: this
    one (the tasks of service.tasks) or one that calls `child(argv, tasks)` with its own tasks.
    A child stopped early gets SIGTERM and `grace` seconds to tidy up (a Dask relay cancels its
    remote task) before SIGKILL."""
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", entry, task, str(budget.memory), str(os.getpid())],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**CHILD_ENV, **os.environ}, close_fds=True)
    talk = _Conversation(proc, json.dumps(payload).encode(), on_progress)
    try:
        failure = talk.until(t0 + budget.seconds, keep_going)
        if failure is None:
            try:
                proc.wait(max(0.0, t0 + budget.seconds - time.monotonic()))
            except subprocess.TimeoutExpired:
                failure = "seconds"
    finally:  # whatever happened here, the child does not outlive this call
        if proc.poll() is None and grace > 0:
            proc.terminate()
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        talk.close()
    out = Outcome(seconds=time.monotonic() - t0)
    if failure == "seconds":
        out.failure, out.reason = "seconds", budget.seconds_reason()
    elif failure == "stopped":
        out.failure, out.reason = "stopped", "stopped"
    elif failure == "output":
        out.failure, out.reason = "crashed", f"the {task} process wrote more than {MAX_OUTPUT} bytes"
    elif talk.result is not None and proc.returncode == 0:
        out.result = talk.result
    elif talk.failure == "memory" or OUT_OF_MEMORY.search(talk.log_tail):
        out.failure, out.reason = "memory", budget.memory_reason()
    else:
        out.failure = "crashed"
        out.reason = talk.detail or f"the {task} process ended abnormally ({_exit_text(proc.returncode)})"
    return out


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


class _Conversation:
    """Feed the payload to the child's stdin; read its JSON lines and relay its stderr."""

    def __init__(self, proc, data: bytes, on_progress):
        self.proc, self.data, self.on_progress = proc, memoryview(data), on_progress
        self.buf, self.size, self.log_tail = b"", 0, b""
        self.result = self.failure = self.detail = None
        self.sel = selectors.DefaultSelector()
        os.set_blocking(proc.stdin.fileno(), False)
        self.sel.register(proc.stdin, selectors.EVENT_WRITE)
        self.sel.register(proc.stdout, selectors.EVENT_READ)
        self.sel.register(proc.stderr, selectors.EVENT_READ)

    def until(self, deadline: float, keep_going) -> str | None:
        """Talk until the child closes its output: None, or why it must be killed now."""
        next_tick = time.monotonic() + TICK
        while self.sel.get_map():
            now = time.monotonic()
            if now >= deadline:
                return "seconds"
            if now >= next_tick:
                next_tick = now + TICK
                if keep_going is not None and not keep_going():
                    return "stopped"
            for key, _ in self.sel.select(min(deadline, next_tick) - now):
                if key.fileobj is self.proc.stdin:
                    self._write()
                elif not self._read(key.fileobj):
                    return "output"
        return None

    def _write(self) -> None:
        try:
            n = os.write(self.proc.stdin.fileno(), self.data[:1 << 16])
        except BrokenPipeError:  # the child died before reading everything: its exit tells why
            n = len(self.data)
        self.data = self.data[n:]
        if not self.data:
            self.sel.unregister(self.proc.stdin)
            self.proc.stdin.close()

    def _read(self, f) -> bool:
        chunk = os.read(f.fileno(), 1 << 16)
        if not chunk:
            self.sel.unregister(f)
            return True
        if f is self.proc.stderr:
            self._log(chunk)
            return True
        self.size += len(chunk)
        if self.size > MAX_OUTPUT:
            return False
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            self._message(line)
        return True

    def _log(self, text: bytes) -> None:
        """What the child printed besides its messages: to the operator's log; the tail tells a
        memory abort apart."""
        sys.stderr.buffer.write(text)
        sys.stderr.flush()
        self.log_tail = (self.log_tail + text)[-4096:]

    def _message(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            msg = None
        if not isinstance(msg, dict):
            self._log(line + b"\n")
            return
        if "progress" in msg and self.on_progress is not None:
            self.on_progress(**msg["progress"])
        elif "result" in msg:
            self.result = msg["result"]
        elif "failure" in msg:
            self.failure, self.detail = msg["failure"], msg.get("detail")

    def close(self) -> None:
        if self.buf:
            self._log(self.buf + b"\n")
        self.sel.close()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if not f.closed:
                f.close()


# ----------------------------------------------------------------------------- child side

def die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this process when the parent dies; and exit now if it already has."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(0)


def _emit(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


class _Progress:
    """progress(stage, percent, elapsed) -> a progress line, at most every PROGRESS_EVERY s per stage."""

    def __init__(self):
        self.stage, self.sent = None, 0.0

    def __call__(self, stage: str, percent: float, elapsed: float) -> None:
        now = time.monotonic()
        if stage == self.stage and now - self.sent < PROGRESS_EVERY:
            return
        self.stage, self.sent = stage, now
        _emit({"progress": {"stage": stage, "percent": round(float(percent), 1),
                            "elapsed": round(float(elapsed), 2)}})


def child(argv: list[str], tasks: dict | None = None) -> int:
    """The child's main: cap, read the payload, run `tasks[TASK]` (default service.tasks.TASKS)."""
    task, memory, parent = argv[0], int(argv[1]), int(argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))  # first: everything below counts
    die_with_parent(parent)
    try:
        os.nice(5)  # the API stays responsive while children compute
    except OSError:
        pass
    payload = json.loads(sys.stdin.buffer.read())
    if tasks is None:   # imported under the memory cap: the task's modules count too
        from service.tasks import TASKS as tasks
    try:
        result = tasks[task](payload, _Progress())
    except MemoryError:
        _emit({"failure": "memory"})
        return 1
    except Exception as err:  # logged for the operator (stderr); the API shows one line
        traceback.print_exc()
        _emit({"failure": "error", "detail": f"internal error: {type(err).__name__}"})
        return 1
    _emit({"result": result})
    return 0


if __name__ == "__main__":
    sys.exit(child(sys.argv[1:]))
