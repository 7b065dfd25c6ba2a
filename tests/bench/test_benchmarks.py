"""Every script under benchmarks/ runs as documented: `--help` (no computation) and a `--small` mode.

Run as README documents them, `python benchmarks/NAME.py`, from the repository root, with a decoy
top-level `benchmarks` package first on the path (Opacus 1.6 installs one into site-packages): the
scripts import their siblings by file name, so the decoy must not matter. The small modes take
seconds each; their figures are checked, not only their exit codes.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    decoy = tmp_path_factory.mktemp("decoy")
    (decoy / "benchmarks").mkdir()
    (decoy / "benchmarks" / "__init__.py").write_text("# a foreign top-level package named benchmarks\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(decoy), str(ROOT)])}


def bench(env, name, *args, timeout=300):
    return subprocess.run([sys.executable, f"benchmarks/{name}", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_the_scripts_are_found():
    assert {"bench_certify.py", "bench_two_sided.py", "bench_report.py", "bench_utility.py",
            "bench_verifier_v3.py", "reproduce.py"} <= set(SCRIPTS) and len(SCRIPTS) >= 12


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_is_usage_and_names_the_small_mode(env, name):
    r = bench(env, name, "--help", timeout=60)  # bench_report --help used to run the whole benchmark
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.startswith("usage: ") and "--small" in r.stdout, r.stdout


def test_the_decoy_package_is_on_the_path(env):
    r = subprocess.run([sys.executable, "-c", "import benchmarks; print(benchmarks.__file__)"], env=env,
                       capture_output=True, text=True, cwd="/")
    assert "decoy" in r.stdout, r.stdout


def lines_matching(pattern, text):
    return [x for x in text.splitlines() if re.search(pattern, x)]


def test_bench_certify_small(env):
    r = bench(env, "bench_certify.py", "--small")
    assert r.returncode == 0, r.stderr
    row = lines_matching(r"^\s+5\s+2\s+2\.589777\s", r.stdout)
    assert len(row) == 1 and row[0].split()[-1] == "yes" and float(row[0].split()[7]) <= 0.1
    assert "all certified on the first try: True" in r.stdout and "all replays accepted: True" in r.stdout


def test_bench_two_sided_small(env):
    r = bench(env, "bench_two_sided.py", "--small")
    assert r.returncode == 0, r.stderr
    row = lines_matching(r"^\s+5\s+2\s+2\.589777\s+2\.589776\s", r.stdout)
    assert len(row) == 1 and row[0].split()[-1] == "yes", r.stdout
    tv_upper, tv_lower = float(row[0].split()[5]), float(row[0].split()[6])
    assert tv_upper <= 0.1 < tv_lower
    assert "all two-sided: True" in r.stdout


def test_bench_coverage_small(env):
    r = bench(env, "bench_coverage.py", "--small")
    assert r.returncode == 0, r.stderr
    assert len(lines_matching(r"\saccepted\s", r.stdout)) == 2, r.stdout
    assert "2/2 cells ran; 2 certified two-sided" in r.stdout


def test_bench_exact_small(env):
    r = bench(env, "bench_exact.py", "--small")
    assert r.returncode == 0, r.stderr
    assert lines_matching(r"^\s+100\s+10\s+0\.1\s+1\.426215\s", r.stdout)  # Table 4
    assert lines_matching(r"^\s+2\s+1\s+0\.7\s+0\.43205", r.stdout) and "cells 2:" in r.stdout


def test_bench_report_small(env):
    r = bench(env, "bench_report.py", "--small")
    assert r.returncode == 0, r.stderr
    row = lines_matching(r"^M1_E4\s", r.stdout)
    assert len(row) == 1 and row[0].split()[1] == "ACCEPT" and int(row[0].split()[-1]) > 50  # page kB


def test_bench_service_small(env):
    r = bench(env, "bench_service.py", "--small")
    assert r.returncode == 0, r.stderr
    assert "/v1/sigma: 100 requests, 5 concurrent clients" in r.stdout and "errors 0  status {200: 100}" in r.stdout


def test_bench_sigma_small(env):
    r = bench(env, "bench_sigma.py", "--small")
    assert r.returncode == 0, r.stderr
    row = lines_matching(r"^\s+100\s+10\s", r.stdout)
    assert len(row) == 1 and row[0].split()[2:5] == ["1.426215", "=", "1.736983"]  # closed form rounded up
    assert "all 2 exact sigma equal Table 4" in r.stdout


def test_bench_utility_small_and_one_seed(env):
    for args in (("--small",), ("--seeds", "1")):
        r = bench(env, "bench_utility.py", *args)
        assert r.returncode == 0, r.stderr  # one seed used to die in statistics.stdev
        row = lines_matching(r"^\s+10\s+5\s+3\.632096\s+2\.889659\s", r.stdout)
        assert len(row) == 1, r.stdout
        acc = [float(x) for x in re.findall(r"(\d+\.\d+) \+- +-", row[0])]
        assert len(acc) == 2 and all(50 < a <= 100 for a in acc)


def test_bench_utility_names_the_trainer_models():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_utility
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from trainer import models
    assert bench_utility.MODELS == tuple(models.MODELS)


def test_bench_verifier_v3_small_and_a_bad_cell(env):
    r = bench(env, "bench_verifier_v3.py", "--small")
    assert r.returncode == 0, r.stderr
    row = lines_matching(r"^\| 2,2,0\.3,- \| ", r.stdout)
    assert len(row) == 1
    cells = [c.strip() for c in row[0].strip("|").split("|")]
    assert float(cells[5]) <= 0.3 < float(cells[10])  # bound at sigma, tv_lower at sigma_low
    bad = bench(env, "bench_verifier_v3.py", "1,2")
    assert bad.returncode == 2 and bad.stderr.splitlines()[-1].startswith("bench_verifier_v3.py: error: a cell is")


def test_bench_verify_cost_small(env):
    r = bench(env, "bench_verify_cost.py", "--small")
    assert r.returncode == 0, r.stderr
    assert lines_matching(r"^fixture\s+upper\s", r.stdout) and lines_matching(r"^lower fixture\s+lower\s", r.stdout)


def test_bench_vs_accountant_small(env):
    r = bench(env, "bench_vs_accountant.py", "--small")
    assert r.returncode == 0, r.stderr
    rows = lines_matching(r"^\s+5\s+2\s+2\.589777 \| (fft|geom)", r.stdout)
    assert len(rows) == 2 and all("0.09999998407   yes" in x for x in rows), r.stdout
    assert "sigmacert certifies 2.589777" in r.stdout


def test_bench_vs_accountant_dp_small(env, tmp_path):
    """The (eps, delta) question at one tiny cell: the accountant's bracket is read off its own runs and
    starts at the exact sigma, it never certifies below the exact sigma, sigmacert's two-sided
    certificate is accepted by the verifier, the record is appended to --json, and a rerun resumes it."""
    out = tmp_path / "dp.jsonl"
    r = bench(env, "bench_vs_accountant.py", "--question", "dp", "--small", "--json", out, timeout=600)
    assert r.returncode == 0, r.stderr
    tol = float(re.search(r"bracket tolerance (\S+) relative", r.stdout).group(1))
    (rec,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (rec["M"], rec["E"], rec["epsilon"], rec["delta"]) == (5, 2, 1, "1e-5")
    exact = float(rec["exact_sigma"])
    cert = rec["certificate"]
    assert cert["status"] == "two-sided" and cert["kind"] == "dp" and float(cert["bound"]) <= 1e-5
    assert float(cert["sigma_low"]) < float(cert["sigma"]) and float(cert["sigma"]) >= exact
    assert cert["verify"]["status"] == "ok" and cert["verify"]["accepted"] and cert["verify"]["reason"] == "accepted"
    fs = rec["fs"]
    runs = fs["runs"]
    assert len(runs) >= 2 and len(lines_matching(r"^  run M=5 E=2 eps=1 ", r.stdout)) == len(runs)
    certified = [x["sigma"] for x in runs if x["certified"]]
    missed = [x["sigma"] for x in runs if not x["certified"]]
    for x in runs:  # certified means its upper eps bound meets eps
        assert x["certified"] == (x["status"] in ("done", "decided") and x["upper"] is not None and x["upper"] <= 1)
        assert x["sigma"] > exact  # the search runs above the exact sigma only
    assert fs["sigma"] == min(certified) and fs["lo"] == max([exact, *missed]) and fs["lo"] < fs["sigma"]
    assert fs["stop"] == "bracket" and abs(fs["width"] - (fs["sigma"] / fs["lo"] - 1)) <= 1e-12 and fs["width"] <= tol
    assert fs["sigma"] >= exact  # the accountant is not below the exact sigma
    assert abs(fs["seconds"] - sum(x["seconds"] for x in runs)) <= 1e-9
    row = lines_matching(r"^\s+5\s+2\s+1\s+1e-5 \|", r.stdout)[-1]  # the final table's row
    noise, time_ratio, _ = row.split("|")[-1].split()
    assert abs(float(noise) - fs["sigma"] / exact) <= 1e-5 and float(time_ratio) > 0
    again = bench(env, "bench_vs_accountant.py", "--question", "dp", "--small", "--json", out, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "resumed from" in again.stdout and " run M=5" not in again.stdout and len(out.read_text().splitlines()) == 1
    assert lines_matching(r"^\s+5\s+2\s+1\s+1e-5 \|", again.stdout)[-1] == row


def test_bench_tail_certificates_small(env):
    """One small cell at delta 1e-6 through the CLI: two-sided one resolution step apart, the verifier accepts,
    and the figures are each child's own (CPU seconds, peak RSS) with the ratio of the two."""
    r = bench(env, "bench_tail_certificates.py", "--small", "--json")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)["rows"]
    assert row["cell"] == "3,2 eps1 d1e-6" and row["exit"] == 0 and row["certified"] and row["two_sided"]
    assert row["steps_apart"] == 1 and float(row["upper"]) <= 1e-6 < float(row["lower"])
    assert row["accepted"] and 0 < row["cpu_seconds"] < 120 and 10 << 20 < row["peak_rss"] < 4 << 30
    assert abs(row["ratio"] - row["verify_cpu_seconds"] / row["cpu_seconds"]) <= 0.01   # from the unrounded times
    # the printed table from the same rows (the benchmark's own formatter; a second run would cost as much again)
    path = ROOT / "benchmarks" / "bench_tail_certificates.py"
    spec = importlib.util.spec_from_file_location("tail_certificates", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "| 3,2 eps1 d1e-6 |" in module.table([row]) and module.goals(row)


def test_bench_vs_accountant_dp_refuses_bad_cells(env):
    r = bench(env, "bench_vs_accountant.py", "--question", "dp", "--cells", "100by10", timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--cells" in r.stderr


def test_reproduce_small(env, tmp_path):
    out = tmp_path / "reproduction.md"
    r = bench(env, "reproduce.py", "--small", "-o", out)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "| 100 | 10 | 1.426215 | 1.426215 | = |" in text  # Table 4's exact sigma
    assert "| 100 | 10 | 1.426215 | 1.736983 |" in text     # the closed form, rounded up
    assert bench(env, "reproduce.py", "--small").stdout.rstrip().endswith("do not reproduce)")
    # docs/reproduction.md is not stale: its deterministic tables are what the code computes today
    committed = (ROOT / "docs" / "reproduction.md").read_text()
    for section in ("## Section 5.2 / Table 1", "## Table 2", "## Table 3", "## Section 4"):
        ours, doc = (t.split(section, 1)[1].split("\n## ", 1)[0] for t in (text, committed))
        rows = [x for x in ours.splitlines() if x.startswith("| ")][1:]  # below the header
        assert len(rows) >= 5 and all(x in doc.splitlines() for x in rows), section


def documented_commands() -> list[tuple[str, list[str]]]:
    """(script, --flags) of every `python benchmarks/NAME.py ...` in README, docs/ and the scripts' docstrings."""
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "benchmarks").glob("*.py"))]
    out = []
    for path in texts:
        for m in re.finditer(r"python benchmarks/(\w+\.py)([^`\n#]*)", path.read_text()):
            out.append((m.group(1), re.findall(r"--[a-z][a-z-]*", m.group(2))))
    return out


def test_every_documented_benchmark_flag_exists(env):
    docs = documented_commands()
    assert len(docs) >= 20 and {s for s, _ in docs} <= set(SCRIPTS)
    helps = {}
    for script, flags in docs:
        if script not in helps:
            helps[script] = bench(env, script, "--help", timeout=60).stdout
        for flag in flags:
            assert re.search(rf"{flag}\b", helps[script]), (script, flag)


def test_bench_sigma_cells_small(env):
    r = bench(env, "bench_sigma_cells.py", "--small")
    assert r.returncode == 0, r.stderr
    rows = {tuple(c.strip() for c in x.split("|")[1:4]): x.split("|")[4].strip()
            for x in lines_matching(r"^\| \d+ \| \d+ \| (tv|dp|tpr) \|", r.stdout)}
    assert len(rows) == 6
    assert rows["100", "10", "tv"] == "1.426215"              # Table 4 (lambda = 0.1)
    assert rows["100", "10", "dp"] == "1.36919" and rows["100", "10", "tpr"] == "1.645356"   # docs/targets.md
    assert rows["1", "1", "tv"] == "3.978949"                  # M = 1: the Gaussian shift's closed form
