"""sigmacert audit --claims: every row audited, a table and an index; a run killed mid-way resumes without losing
or redoing a finished row (a real subprocess, SIGKILL)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = """steps,epochs,sigma,kind,epsilon,delta,target,source
100,10,1.426215,dp,0.95,1e-5,,a
100,10,1.426215,dp,0.93,1e-5,,b
100,20,1.907073,dp,1.022,1e-5,,c
100,10,1.426215,tv,,,0.1,d
100,20,1.907073,dp,0.9,1e-5,,e
"""


def _cmd(csv, out, key):
    return [sys.executable, "-m", "sigmacert", "audit", "--claims", str(csv), "--out-dir", str(out), "--key",
            str(key), "--json", "--quiet"]


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _lines(out):
    p = out / "progress.jsonl"
    return p.read_text().splitlines() if p.exists() else []


def test_killed_run_resumes_losing_no_finished_row(tmp_path):
    subprocess.run([sys.executable, "-m", "sigmacert", "keygen", "-o", str(tmp_path / "k")], env=_env(), check=True,
                   capture_output=True)
    csv, out, key = tmp_path / "claims.csv", tmp_path / "out", tmp_path / "k" / "private.pem"
    csv.write_text(CLAIMS)
    proc = subprocess.Popen(_cmd(csv, out, key), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while len(_lines(out)) < 1 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _lines(out)
    assert 1 <= len(before) < 5, "the kill must land after the first finished row and before the last"
    certs = {json.loads(x)["certificate"]: (out / json.loads(x)["certificate"]).read_bytes() for x in before}
    done = subprocess.run(_cmd(csv, out, key), env=_env(), capture_output=True, text=True, check=True)
    after = _lines(out)
    assert after[:len(before)] == before                     # nothing finished was lost or rewritten
    rows = [json.loads(x)["row"] for x in after]
    assert sorted(rows) == [1, 2, 3, 4, 5]                   # every row exactly once
    for name, data in certs.items():
        assert (out / name).read_bytes() == data             # finished rows were not audited again
    index = json.loads(done.stdout)
    assert [e["verdict"] for e in index["rows"]] == ["HOLDS", "FALSE", "HOLDS", "HOLDS", "FALSE"]
    assert json.loads((out / "index.json").read_text())["rows"] == index["rows"]
    from verifier.core import verify_bytes
    from verifier.format.envelope import load_public_key
    pub = load_public_key((tmp_path / "k" / "public.pem").read_bytes())
    for e in index["rows"]:
        assert verify_bytes((out / e["certificate"]).read_bytes().strip(), [pub]).accepted


def test_bad_rows_are_refused_in_their_row(tmp_path):
    """A row with a bad claim is recorded REFUSED with its reason; the others are audited; a bad header is one line."""
    csv = tmp_path / "c.csv"
    csv.write_text("steps,epochs,sigma,epsilon,delta,source\n100,10,1.426215,0.95,1e-5,ok\n100,10,-1,0.95,1e-5,bad\n"
                   "100,10,1.426215,0.95,,half\n")
    r = subprocess.run([sys.executable, "-m", "sigmacert", "audit", "--claims", str(csv), "--out-dir",
                        str(tmp_path / "o"), "--json", "--quiet"], env=_env(), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    assert [e["verdict"] for e in rows] == ["HOLDS", "REFUSED", "REFUSED"]
    assert "sigma" in rows[1]["error"] and "delta" in rows[2]["error"]
    (tmp_path / "h.csv").write_text("steps,epochs,sigma,colour\n1,1,1,red\n")
    r = subprocess.run([sys.executable, "-m", "sigmacert", "audit", "--claims", str(tmp_path / "h.csv")], env=_env(),
                       capture_output=True, text=True)
    assert r.returncode == 2 and "colour" in r.stderr and "Traceback" not in r.stderr and r.stderr.count("\n") == 1
