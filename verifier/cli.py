"""sigmacert-verify CERT.json --key PUBLIC.pem [--key ...] [--subject FILE] [--json]
                 [--max-memory SIZE] [--max-seconds S]
sigmacert-verify --release MODEL_DIR --key RELEASE_PUBLIC.pem --key ISSUER_PUBLIC.pem [--json]
sigmacert-verify [CERT.json] --log-proof PROOF.json --key ISSUER_PUBLIC.pem [--json]

Exit status: 0 ACCEPT, 1 REJECT, 2 usage or I/O error.  Never a traceback.  The verification runs
in a child process whose address space and CPU time are capped (the budget plus headroom), so an
error of the cost model cannot take the machine down: a child stopped by a cap is a REJECT with
reason memory-exhausted or time-exhausted."""
from __future__ import annotations

import argparse
import faulthandler
import json
import os
import re
import resource
import sys

from .core import Result, load_inputs, read_limited, verify_bytes
from .cost import DEFAULT_MAX_MEMORY, DEFAULT_MAX_SECONDS, GiB
from .format.envelope import load_public_key
from .format.strict import Reject, load_json
from .release import verify_release
from .transparency import verify_log_proof

UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def size(text: str) -> int:
    """Bytes from '4096', '512M', '2G', '1.5GiB' (K, M, G, T are powers of 1024)."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not m or float(m[1]) <= 0:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 2G, 512M, 1048576)")
    return int(float(m[1]) * UNITS[m[2].upper()])


def seconds(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        s = -1.0
    if not 0 < s < 1e9:
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {text!r}")
    return s


def caps(max_memory: int, max_seconds: float) -> tuple[int, int]:
    """Address-space and CPU-time caps of the child: 1.5 times the budget plus 1 GiB on top of
    what the process already maps; 4 times the predicted seconds plus a minute."""
    try:
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        mapped = 0
    return mapped + int(1.5 * max_memory) + GiB, int(4 * max_seconds) + 60


def run_capped(fn, mem_cap: int, cpu_cap: int) -> Result:
    """fn() -> Result in a child process under RLIMIT_AS and RLIMIT_CPU (FLINT aborts the
    process when an allocation fails, so the caps must apply to a process we can lose)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns
        code = 3
        try:
            os.close(r)
            faulthandler.disable()  # an abort at the cap is reported by the parent, not as a stack dump
            for lim, cap in ((resource.RLIMIT_AS, mem_cap), (resource.RLIMIT_CPU, cpu_cap), (resource.RLIMIT_CORE, 0)):
                hard = resource.getrlimit(lim)[1]
                cap = cap if hard == resource.RLIM_INFINITY else min(cap, hard)
                resource.setrlimit(lim, (cap, hard))
            out = json.dumps(fn().__dict__).encode()
            with os.fdopen(w, "wb") as f:
                f.write(out)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status, usage = os.wait4(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and data:
        return Result(**json.loads(data))
    if usage.ru_utime + usage.ru_stime >= cpu_cap - 1:
        return Result(False, "time-exhausted", f"the verification was stopped at the CPU-time cap of {cpu_cap} s")
    if os.WIFSIGNALED(status):
        return Result(False, "memory-exhausted", f"the verification was stopped at the address-space cap of "
                      f"{mem_cap / GiB:.3g} GiB (signal {os.WTERMSIG(status)}; FLINT aborts when an allocation fails)")
    return Result(False, "internal-error", f"the verification process exited with status {os.WEXITSTATUS(status)}")


def report(res: Result, as_json: bool):
    if as_json:
        print(json.dumps(res.as_dict(), sort_keys=True))
        return
    print(f"{'ACCEPT' if res.accepted else 'REJECT'} ({res.reason}): {res.detail}")
    kind = ((res.claim or {}).get("kind") or {}).get("name", "tv") if isinstance(res.claim, dict) else "tv"
    if kind != "tv" and res.replayed_value is not None:
        print(f"  replayed bound on the {kind} functional: {res.replayed_value}")
    if res.replayed_bound is not None:
        print(f"  replayed bound on TV: {res.replayed_bound}   recorded bound: {res.recorded_bound}")
    if res.replayed_lower is not None:
        at = "sigma (the audit's lower side)" if res.detail.startswith("audit") else "sigma_low"
        print(f"  replayed lower bound on TV at {at}: {res.replayed_lower}")
    for m in res.mismatches:
        print(f"  mismatch: {m}")
    for s in res.unchecked_subjects:
        print(f"  subject NOT checked: {s['name']!r} (sha256 {s['sha256']}); --subject FILE checks it")
    if res.cost:
        print(f"  predicted cost: {res.cost['seconds']:.3g} s, {res.cost['memory'] / GiB:.3g} GiB")
    print(f"  time: {res.seconds:.2f} s")


def log_check(args) -> dict:
    """{"accepted", "reason", "detail", "inclusion"} of --log-proof (usage errors raise ValueError/OSError)."""
    keys = [load_public_key(read_limited(k)) for k in args.key]
    cert = None if args.certificate is None else read_limited(args.certificate)
    try:
        proof = load_json(read_limited(args.log_proof), "log-proof")
        inc = verify_log_proof(proof, keys, cert)
    except Reject as r:
        return {"accepted": False, "reason": r.reason, "detail": r.detail, "inclusion": None}
    return {"accepted": True, "reason": "included", "inclusion": inc,
            "detail": f"leaf {inc['index']} of the log's tree of size {inc['size']}, root {inc['root'][:16]}..., "
                      f"head signed by {inc['keyid'][:16]}... at {inc['time']}"}


def log_report(log: dict, res, as_json: bool) -> int:
    ok = log["accepted"] and (res is None or res.accepted)
    if as_json:
        print(json.dumps({"result": "ACCEPT" if ok else "REJECT", "log": log,
                          "certificate": None if res is None else res.as_dict()}, sort_keys=True))
    else:
        if res is not None:
            report(res, False)
        print(f"{'ACCEPT' if log['accepted'] else 'REJECT'} (log {log['reason']}): {log['detail']}")
        if res is None:
            print("  the certificate itself was not replayed (give CERT.json too)")
    return 0 if ok else 1


def release_main(args) -> int:
    """--release: every layer of a sealed release, the certificate's replay under the caps."""

    def replay(data, keys):
        work = lambda: verify_bytes(data, keys, max_memory=args.max_memory, max_seconds=args.max_seconds)
        return run_capped(work, *caps(args.max_memory, args.max_seconds)) if hasattr(os, "fork") else work()

    res = verify_release(args.release, args.key, replay)
    if args.json:
        print(json.dumps(res.as_dict(), sort_keys=True))
    else:
        print(f"{'ACCEPT' if res.accepted else 'REJECT'} (release): {args.release}")
        for f in res.failures:
            print(f"  {f['reason']}: {f['detail']}")
        for m in res.model_files:
            same = "= manifest" if m["matches"] else "CHANGED"
            print(f"  model file {m['name']}: sha256 {m['sha256'][:16]}... {same}")
        if res.run and res.claim:
            r = res.run
            print(f"  manifest run: {r.get('scheme')} M={r.get('steps')} E={r.get('epochs')} sigma={r.get('sigma')} "
                  f"steps done {r.get('steps_done')} ({r.get('empty_steps')} empty), "
                  f"N0={r.get('n0')}, B0={r.get('b0')}")
        if res.certificate:
            c = res.certificate
            print(f"  certificate: {'ACCEPT' if c['accepted'] else 'REJECT'} ({c['reason']}): {c['detail']}")
        if res.card:
            print(f"  model card: {res.card}")
    return 0 if res.accepted else 1


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, without the usage block (--help shows it)
        self.exit(2, f"{self.prog}: error: {message} (--help shows the usage)\n")


def main(argv=None) -> int:
    ap = _Parser(prog="sigmacert-verify", description="Verify a sigmacert "
                 "certificate by replaying Lemma C.5 independently.")
    ap.add_argument("certificate", nargs="?", help="DSSE envelope (JSON)")
    ap.add_argument("--key", action="append", required=True,
                    help="trusted Ed25519 public key (PEM); with --release also the release's ECDSA key")
    ap.add_argument("--release", metavar="MODEL_DIR", help="verify a sealed release directory (docs/release.md)")
    ap.add_argument("--log-proof", metavar="PROOF.json",
                    help="check offline that the certificate is in the log (RFC 9162 inclusion proof under a signed "
                         "tree head); without a certificate, the proof's own certificate")
    ap.add_argument("--subject", help="regular file whose SHA-256 must be a subject of the Statement")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    ap.add_argument("--max-memory", type=size, default=DEFAULT_MAX_MEMORY, metavar="SIZE",
                    help=f"predicted peak memory allowed, e.g. 2G, 512M (default {DEFAULT_MAX_MEMORY // GiB}G)")
    ap.add_argument("--max-seconds", type=seconds, default=DEFAULT_MAX_SECONDS, metavar="S",
                    help=f"predicted replay seconds allowed (default {DEFAULT_MAX_SECONDS:g})")
    args = ap.parse_args(argv)  # exits 2 on usage errors
    if args.certificate is not None and args.release is not None or \
            args.certificate is None and args.release is None and args.log_proof is None:
        ap.error("give a certificate, --release MODEL_DIR or --log-proof PROOF.json")
    try:
        if args.release is not None:
            return release_main(args)
        log = None if args.log_proof is None else log_check(args)
        if args.certificate is None:
            return log_report(log, None, args.json)
        data, keys, digest = load_inputs(args.certificate, args.key, args.subject)
        work = lambda: verify_bytes(data, keys, digest, max_memory=args.max_memory, max_seconds=args.max_seconds)
        res = run_capped(work, *caps(args.max_memory, args.max_seconds)) if hasattr(os, "fork") else work()
        if log is not None:
            return log_report(log, res, args.json)
        report(res, args.json)
    except (OSError, ValueError, TypeError) as e:
        if isinstance(e, BrokenPipeError):  # the reader went away (e.g. `| head`): say nothing more
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0 if res.accepted else 1
        msg = f"sigmacert-verify: cannot read input: {e}"
        print(json.dumps({"result": "ERROR", "detail": msg}) if args.json else msg, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 2
    except Exception as e:  # last resort: never a traceback
        msg = f"sigmacert-verify: internal error: {type(e).__name__}: {e}"
        print(json.dumps({"result": "ERROR", "detail": msg}) if args.json else msg, file=sys.stderr)
        return 2
    return 0 if res.accepted else 1
