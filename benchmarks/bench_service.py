"""Benchmark: /v1/sigma of the certification service under concurrent load.

    python benchmarks/bench_service.py [--url http://127.0.0.1:8080] [--requests 2000]
                                       [--concurrency 50] [--json] [--small]

Without --url it starts its own `sigmacert serve` on a free loopback port (temporary
database and key, one worker), warms the cache for the cells below (their exact sigma
is computed once), then sends the requests from `concurrency` concurrent keep-alive
clients (asyncio streams, one connection each, a minimal HTTP/1.1 client) and reports latency percentiles,
throughput and errors (any status other than 200, or a transport error).

`--unique` appends a distinct `&nonce=i` to every query: each request then goes through
FastAPI to the handler's in-memory cache instead of the rendered-bytes cache.

Target: 0 errors, p99 < 100 ms once cached (2,000 requests, 50 clients, loopback).
The client shares the machine with the server, so the latencies include its own
scheduling; on a busy 2-core machine they are an upper bound on the server's.
`--small`: 100 requests from 5 clients (seconds), to check the benchmark runs; it exits 0 when
no request failed (the latency target is the full run's).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from urllib.parse import urlsplit

import httpx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

CELLS = [(100, 10, "0.1"), (100, 20, "0.1"), (100, 10, "0.10")]  # "0.10" normalises to the first cell


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, int(round(p / 100 * len(xs) + 0.5)) - 1))
    return xs[k]


class Conn:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams (a load generator, like wrk):
    cheap enough that 50 of them do not starve the server they share the machine with."""

    def __init__(self, host: str, port: int):
        self.host, self.port, self.r, self.w = host, port, None, None

    async def get(self, path: str) -> tuple[int, bytes]:
        if self.w is None:
            self.r, self.w = await asyncio.open_connection(self.host, self.port)
        self.w.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n\r\n".encode())
        head = await self.r.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = next(int(v) for k, _, v in (ln.partition(":") for ln in lines[1:])
                      if k.strip().lower() == "content-length")
        return status, await self.r.readexactly(length)

    def close(self):
        if self.w is not None:
            self.w.close()


async def run(url: str, n: int, conc: int, unique: bool = False) -> dict:
    u = urlsplit(url)
    lat, errors, codes = [], 0, {}
    todo = iter(range(n))
    paths = [f"/v1/sigma?steps={m}&epochs={e}&target={t}" for m, e, t in CELLS]

    async def one_client():
        nonlocal errors
        c = Conn(u.hostname, u.port or 80)
        try:
            for i in todo:
                t0 = time.perf_counter()
                try:
                    path = paths[i % len(paths)] + (f"&nonce={i}" if unique else "")
                    status, body = await c.get(path)
                    ok = status == 200 and json.loads(body)["exact"] is not None
                    codes[status] = codes.get(status, 0) + 1
                except (OSError, ValueError, KeyError, StopIteration, asyncio.IncompleteReadError):
                    ok = False
                    c.close()
                    c = Conn(u.hostname, u.port or 80)
                lat.append(time.perf_counter() - t0)
                errors += not ok
        finally:
            c.close()
    t0 = time.perf_counter()
    await asyncio.gather(*(one_client() for _ in range(conc)))
    wall = time.perf_counter() - t0
    ms = [x * 1000 for x in lat]
    return {"requests": n, "concurrency": conc, "errors": errors, "status_codes": codes,
            "p50_ms": round(percentile(ms, 50), 2), "p90_ms": round(percentile(ms, 90), 2),
            "p99_ms": round(percentile(ms, 99), 2), "max_ms": round(max(ms), 2),
            "mean_ms": round(statistics.fmean(ms), 2), "wall_s": round(wall, 2),
            "requests_per_s": round(n / wall, 1)}


def warm(url: str, timeout: float = 600.0) -> float:
    """Ask for each cell until its exact sigma is cached; return the seconds it took."""
    t0 = time.perf_counter()
    with httpx.Client(base_url=url, timeout=60.0) as c:
        for m, e, t in CELLS:
            while True:
                r = c.get("/v1/sigma", params={"steps": m, "epochs": e, "target": t})
                if r.status_code == 200 and r.json()["exact"] is not None:
                    break
                if r.status_code not in (200, 202) or time.perf_counter() - t0 > timeout:
                    raise SystemExit(f"warm-up failed for {(m, e, t)}: {r.status_code} {r.text[:200]}")
                time.sleep(1.0)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="an already running service (default: start one)")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--unique", action="store_true", help="a distinct query string per request (`&nonce=i`): "
                    "bypasses the rendered-bytes cache, so every request goes through FastAPI and the "
                    "handler's in-memory cache")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--small", action="store_true", help="100 requests, 5 clients (seconds): checks the benchmark runs")
    args = ap.parse_args(argv)
    if args.small:
        args.requests, args.concurrency = 100, 5
    srv, tmp = None, None
    try:
        url = args.url
        if url is None:
            from service_fixtures import Server, make_key, make_token
            tmp = tempfile.mkdtemp(prefix="sigmacert-bench-")
            key = make_key(os.path.join(tmp, "keys"))
            tokens = os.path.join(tmp, "tokens.txt")
            make_token(tokens, "bench")
            srv = Server(tmp, key, tokens).start()
            url = srv.url
        warm_s = warm(url)
        res = asyncio.run(run(url, args.requests, args.concurrency, args.unique))
        res["path"] = "handler (unique query strings)" if args.unique else "rendered-bytes cache"
        res["warm_up_s"] = round(warm_s, 2)
        res["cpus"] = os.cpu_count()
        res["load_avg_1min"] = round(os.getloadavg()[0], 2)
        res["target_met"] = res["errors"] == 0 and res["p99_ms"] < 100.0
    finally:
        if srv is not None:
            srv.stop()
        if tmp is not None:
            subprocess.run(["rm", "-rf", tmp], check=False)
    if args.json:
        print(json.dumps(res))
    else:
        print(f"/v1/sigma: {res['requests']} requests, {res['concurrency']} concurrent clients, loopback "
              f"({res['cpus']} CPUs, load {res['load_avg_1min']}); served by the {res['path']}")
        print(f"  errors {res['errors']}  status {res['status_codes']}")
        print(f"  latency ms: p50 {res['p50_ms']}  p90 {res['p90_ms']}  p99 {res['p99_ms']}  "
              f"max {res['max_ms']}  mean {res['mean_ms']}")
        print(f"  {res['requests_per_s']} requests/s over {res['wall_s']} s; cache warm-up {res['warm_up_s']} s")
        print(f"  target (0 errors, p99 < 100 ms): {'MET' if res['target_met'] else 'NOT MET'}")
    return 0 if res["target_met"] or (args.small and res["errors"] == 0) else 1


if __name__ == "__main__":
    sys.exit(main())
