"""What a new user meets in the first hour: the numbers printed, the messages, the documented commands.

Every check parses what a command prints (text or JSON), not only its exit code.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest

import sigmacert
from certifier.numerics import schemes

ROOT = Path(__file__).resolve().parents[2]
RES = Decimal("0.000001")
CLOSED_LINE = re.compile(r"closed-form sigma \(Cor\. 3\.4, a proven bound\)\s*: (\d+\.\d{6})\s")
EXACT_LINE = re.compile(r"exact sigma \(Thm 4\.1, rounded up to 1e-?\d+\)\s*: (\d+(?:\.\d+)?)\s")  # res(sigma)


def run(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "sigmacert.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def meets(steps, epochs, sigma: Decimal, target: str, scheme=schemes.DEFAULT_SCHEME) -> bool:
    """U(chi^2) of Theorem 3.3 at sigma is <= target, compared exactly (the float bound as a rational)."""
    return Fraction(schemes.tv_bound(steps, epochs, float(sigma), scheme)) <= Fraction(target)


# corners: M = 1, large M, large E, small and large lambda (both branches of c_lambda), fixed bins
CELLS = [(100, 10, "0.1", "random-allocation"), (1, 1, "0.5", "random-allocation"),
         (1, 1000, "0.05", "random-allocation"), (100, 10, "1e-6", "random-allocation"),
         (100, 10, "0.99", "random-allocation"), (10, 100000, "0.1", "random-allocation"),
         (10000, 1, "0.3", "random-allocation"), (100, 10, "0.1", "fixed-bins"),
         (3, 1000, "0.9", "fixed-bins")]


@pytest.mark.parametrize("steps, epochs, target, scheme", CELLS)
def test_the_closed_form_sigma_is_printed_rounded_up_and_the_same_everywhere(steps, epochs, target, scheme):
    """Corollary 3.4 is a proven bound only if the printed decimal has U(c_E) <= lambda: rounded UP."""
    shape = ("--steps", steps, "--epochs", epochs, "--target", target, "--scheme", scheme)
    text, js = run("sigma", *shape), run("sigma", *shape, "--json")
    assert text.returncode == 0 and js.returncode == 0, (text.stderr, js.stderr)
    printed = Decimal(CLOSED_LINE.search(text.stdout).group(1))
    obj = json.loads(js.stdout)
    assert isinstance(obj["closed_form"], str) and Decimal(obj["closed_form"]) == printed  # an exact decimal
    assert sigmacert.closed_form_sigma(steps, epochs, target, scheme=scheme) == printed
    assert printed == printed.quantize(RES)
    assert meets(steps, epochs, printed, target, scheme)
    # the least such grid point at or above the float closed form: rounding up adds no more than needed
    below = printed - RES
    assert below < Decimal(schemes.closed_form_sigma(steps, epochs, float(target), scheme)) \
        or not meets(steps, epochs, below, target, scheme)
    exact = Decimal(EXACT_LINE.search(text.stdout).group(1))
    assert str(exact) == obj["exact"] and exact < printed
    if printed <= 10**6:  # `sigmacert tv` takes sigma <= 1e6: its tv_bound at the printed sigma meets the target
        tv = run("tv", "--steps", steps, "--epochs", epochs, "--sigma", printed, "--scheme", scheme, "--json")
        assert tv.returncode == 0, tv.stderr
        assert Fraction(json.loads(tv.stdout)["tv_bound"]) <= Fraction(target)


def test_the_issue_example_is_no_longer_rounded_down():
    """1.7369820363 was printed as 1.736982, where tv_bound = 0.1000000025 > 0.1."""
    assert not meets(100, 10, Decimal("1.736982"), "0.1")
    out = run("sigma", "--steps", 100, "--epochs", 10, "--target", "0.1").stdout
    assert CLOSED_LINE.search(out).group(1) == "1.736983"


def test_the_service_certificate_and_report_carry_the_same_decimal():
    """GET /v1/sigma, the certificate's numerics and the report's plot label: one decimal, rounded up."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from service.routes.sigma import sigma as sigma_route
    from service.validate import Limits
    from sigmacert import report

    class Exact:
        async def exact(self, m, e, t, sch, stages=None):
            return {"exact": schemes.exact_sigma(m, e, t, sch), "exact_status": "done", "cached": False}
    state = SimpleNamespace(config=SimpleNamespace(limits=Limits()), sigma=Exact())
    for steps, epochs, target, scheme in [(100, 10, "0.1", "random-allocation"), (100, 10, "0.1", "fixed-bins"),
                                          (1, 4, "0.3", "random-allocation")]:
        body = asyncio.run(sigma_route(str(steps), target, str(epochs), scheme, None, state=state))
        assert body["closed_form"] == str(sigmacert.closed_form_sigma(steps, epochs, target, scheme=scheme))
        assert meets(steps, epochs, Decimal(body["closed_form"]), target, scheme)
    key = Ed25519PrivateKey.generate()
    cert = sigmacert.certify(1, 4, "0.3", key=key)  # M = 1: the Gaussian shift, a fraction of a second
    closed = str(sigmacert.closed_form_sigma(1, 4, "0.3"))
    assert cert.predicate["numerics"]["closed_form_sigma"] == closed
    page = report.render(cert.envelope, [key.public_key()])
    assert page.verdict == "ACCEPT" and f"= {closed} (Cor. 3.4, rounded up)" in page.svgs["tv"]


def test_a_tiny_target_keeps_its_digits_in_the_claim_text():
    """lambda = 1e-7: 'accuracy <= 0.5' would be false; the exact 1/2 + lambda/2 is 0.50000005."""
    out = run("sigma", "--steps", 100, "--epochs", 10, "--target", "1e-7").stdout
    assert "(every membership test: accuracy <= 0.50000005)" in out
    closed_tv, closed_acc = re.search(r"exact TV (\S+), accuracy <= (\S+)\)", out).groups()
    assert 0 < float(closed_tv) < 1e-7 and Decimal(closed_acc) >= Decimal("0.5") + Decimal(closed_tv) / 2
    assert Decimal(closed_acc) > Decimal("0.5")


def test_mc_progress_is_one_line_per_tenth_when_stderr_is_not_a_terminal():
    r = run("mc", "--steps", 8, "--epochs", 4, "--sigma", "1.5", "--samples", 400000, "--seed", 5)
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr
    lines = r.stderr.splitlines()
    assert 1 <= len(lines) <= 11 and all(re.fullmatch(r"mc: +\d+\.\d % +\d+\.\d s", x) for x in lines), lines
    assert lines[-1].startswith("mc: 100.0 %")
    assert re.fullmatch(r"M=8 E=4 sigma=1\.5: Monte Carlo TV = 0\.\d{6} \+/- 0\.\d{6} .*\n", r.stdout)


def test_the_atlas_heatmap_title_fits_a_one_panel_grid():
    import matplotlib

    from sigmacert.atlas import heatmap
    from sigmacert.atlas.cells import Cell
    from sigmacert.atlas.index import certified_entry
    pred = {"claim": {"steps": 1, "epochs": 2, "sigma": "5.627083", "target": "0.1"}, "bound": "0.0999",
            "lower": {"sigma_low": "5.627082"}}
    entry = certified_entry(Cell(1, 2, "0.1"), schemes.DEFAULT_SCHEME, pred, "ab" * 32, {"seconds": 4.0}, False)
    with matplotlib.rc_context(heatmap.RC):
        fig = heatmap.figure([entry], schemes.DEFAULT_SCHEME)
        renderer = fig._get_renderer()
        box, title = fig.bbox, fig._suptitle.get_window_extent(renderer)
        assert box.x0 <= title.x0 and title.x1 <= box.x1 and title.y1 <= box.y1, (title, box)
    svg = heatmap.render([entry], schemes.DEFAULT_SCHEME).decode()
    assert "5.627083" in svg  # the certified decimal itself, not a rounded one


# ------------------------------------------------------------------ README: the documented commands run

README = (ROOT / "README.md").read_text()
VENV_BIN = Path(sys.executable).parent


def console_commands(block: str) -> list[tuple[str, list[str]]]:
    """(command, documented output lines) of a ```console block; `[...]` options and `# comments` dropped."""
    out, lines = [], block.splitlines()
    for line in lines:
        if line.startswith("$ "):
            cmd = re.sub(r"\s+#\s.*$", "", line[2:])
            out.append((re.sub(r"\s*\[[^\]]*\]", "", cmd).strip(), []))
        elif out:
            out[-1][1].append(line)
    return out


def shell(script: str, cwd, path: str | None = None, timeout=600):
    env = {**os.environ, "PATH": path if path is not None else os.environ["PATH"]}
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def without_venv_path() -> str:
    return os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != VENV_BIN)


def test_the_quick_start_leads_to_a_working_sigmacert_on_the_next_line(tmp_path):
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "make demo" in quick and "make test" in quick
    steps = re.findall(r"^    (source \.venv/bin/activate)\n    (sigmacert sigma .*)$", quick, re.M)
    assert len(steps) == 1, "the quick start names the activation and a first command"
    activate, first = steps[0]
    if not (ROOT / ".venv" / "bin" / "activate").exists():  # a worktree sharing another checkout's venv
        activate = f"source {VENV_BIN / 'activate'}"
    assert shell(first, tmp_path, without_venv_path()).returncode == 127  # not found before activation
    r = shell(f"cd {ROOT} && {activate} && cd {tmp_path} && {first}", tmp_path, without_venv_path())
    assert r.returncode == 0, r.stderr
    assert CLOSED_LINE.search(r.stdout).group(1) == "1.736983"


def test_every_command_of_the_command_line_section_runs_as_documented(tmp_path):
    """The README's command-line walk-through, in order, in a fresh folder: exit 0 and the printed lines."""
    block = README.split("## The command line", 1)[1].split("```console", 1)[1].split("```", 1)[0]
    commands = console_commands(block)
    assert len(commands) >= 10 and commands[0][0].startswith("sigmacert sigma")
    activate = f"source {VENV_BIN / 'activate'}"
    for cmd, documented in commands:
        r = shell(f"{activate} && {cmd}", tmp_path, without_venv_path())
        assert r.returncode == 0, (cmd, r.stderr)
        printed = r.stdout.splitlines()
        for want, got in zip(documented, printed):
            assert got.startswith(want.split("...")[0].rstrip(", (")), (cmd, want, got)
        assert len(printed) >= len(documented), cmd
        if "--json" in cmd:
            obj = json.loads(r.stdout)
            keys = re.search(r"# (?:keys: )?([a-z0-9_ ]+)$", block.split(cmd, 1)[1].splitlines()[0])
            assert keys and set(keys.group(1).split()) <= set(obj), (cmd, keys)
    assert (tmp_path / "cert.json").exists() and (tmp_path / "cert.html").exists()
    assert "ACCEPT" in shell(f"{activate} && sigmacert-verify cert.json --key keys/public.pem", tmp_path).stdout


def leaf_commands():
    import argparse

    from sigmacert.cli import build_parser

    def walk(p, prefix):
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield prefix, p
        for a in subs:
            for name, sp in a.choices.items():
                yield from walk(sp, prefix + (name,))
    return list(walk(build_parser(), ()))


def test_every_command_but_serve_takes_json_as_the_readme_says():
    assert "Every command but `serve` takes `--json`" in README
    leaves = leaf_commands()
    assert len(leaves) >= 12
    for name, p in leaves:
        has = any("--json" in a.option_strings for a in p._actions)
        assert has == (name != ("serve",)), name


def test_token_create_json(tmp_path):
    tokens = tmp_path / "tokens.txt"
    r = run("token", "create", "--tokens", tokens, "--name", "team-a", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert set(obj) == {"token", "name", "team", "admin", "sha256", "tokens"} and obj["name"] == "team-a"
    assert obj["team"] == "team-a" and obj["admin"] is False  # the team defaults to the name
    import hashlib
    assert hashlib.sha256(obj["token"].encode()).hexdigest() == obj["sha256"]
    assert tokens.read_text() == f"{obj['sha256']} team-a\n" and obj["tokens"] == str(tokens)
    second = json.loads(run("token", "create", "--tokens", tokens, "--json").stdout)  # default name
    assert second["name"].startswith("token-") and tokens.read_text().endswith(f"{second['sha256']} {second['name']}\n")


# ------------------------------------------------------------------ one-line messages

def test_sigmacert_without_a_command_lists_the_commands():
    r = run()
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    for name in {n[0] for n, _ in leaf_commands()}:
        assert re.search(rf"[ :]{re.escape(name)}[,( ]", r.stderr), name
    r = run("token")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "create" in r.stderr
    r = run("bogus")  # a wrong name still says which one
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "invalid choice: 'bogus'" in r.stderr


def verify(*args):
    return subprocess.run([sys.executable, "-m", "verifier", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


CERT = ROOT / "artifacts" / "certificates" / "M100_E10.json"
PUBLIC = ROOT / "artifacts" / "keys" / "public.pem"


def test_the_verifier_says_one_line_for_a_missing_or_private_key(tmp_path):
    r = verify(CERT)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1 and "--key" in r.stderr, r.stderr
    from certifier.certificate.keys import keygen
    keygen(str(tmp_path / "k"))
    r = verify(CERT, "--key", tmp_path / "k" / "private.pem")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "private key" in r.stderr and "public" in r.stderr and "Are you sure" not in r.stderr
    assert "PRIVATE KEY-----" not in r.stderr  # never echoed
    r = verify(CERT, "--key", ROOT / "README.md")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not a PEM public key" in r.stderr, r.stderr


def test_a_malformed_certificate_is_a_reject_exit_1_as_readme_and_docs_say():
    """docs/verifier.md: exit 2 is usage or I/O; a readable file that is no certificate is a REJECT."""
    assert "malformed JSON included, is `REJECT` with its reason and exit code 1" in README
    r = verify(ROOT / "README.md", "--key", PUBLIC)
    assert r.returncode == 1 and r.stdout.startswith("REJECT (envelope-not-json)"), r.stdout
    r = verify(ROOT / "README.md", "--key", PUBLIC, "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["reason"] == "envelope-not-json"
    r = run("show", ROOT / "README.md")  # reading is not verifying: bad input, one line
    assert r.returncode == 2 and r.stderr.count("\n") == 1


# ------------------------------------------------------------------ silent choices

@pytest.fixture(scope="module")
def issued(tmp_path_factory):
    """A two-sided M = 1 certificate about a model file, signed with a throw-away key (fractions of a second)."""
    from certifier.certificate.keys import keygen
    d = tmp_path_factory.mktemp("issued")
    keygen(str(d / "keys"))
    (d / "model.npy").write_bytes(b"weights")
    r = run("certify", "-M", 1, "-E", 4, "-l", "0.3", "--key", d / "keys" / "private.pem", "-o", d / "cert.json",
            "--subject", d / "model.npy", "--quiet")
    assert r.returncode == 0, r.stderr
    return d


def test_verifying_a_subject_bound_certificate_without_subject_says_it_was_not_checked(issued):
    d = issued
    import hashlib
    digest = hashlib.sha256(b"weights").hexdigest()
    r = verify(d / "cert.json", "--key", d / "keys" / "public.pem")
    assert r.returncode == 0 and r.stdout.startswith("ACCEPT")
    assert "subject 'model.npy' NOT checked (give --subject FILE)" in r.stdout.splitlines()[0]
    assert f"  subject NOT checked: 'model.npy' (sha256 {digest}); --subject FILE checks it" in r.stdout
    js = json.loads(verify(d / "cert.json", "--key", d / "keys" / "public.pem", "--json").stdout)
    assert js["result"] == "ACCEPT" and js["unchecked_subjects"] == [{"name": "model.npy", "sha256": digest}]
    checked = verify(d / "cert.json", "--key", d / "keys" / "public.pem", "--subject", d / "model.npy", "--json")
    assert json.loads(checked.stdout)["unchecked_subjects"] == [] and "NOT checked" not in checked.stdout
    assert "NOT checked" in sigmacert.verify(d / "cert.json", d / "keys" / "public.pem").detail
    about_claim = json.loads(verify(CERT, "--key", PUBLIC, "--json").stdout)  # subject 'claim': nothing to say
    assert about_claim["unchecked_subjects"] == [] and "NOT checked" not in about_claim["detail"]


def test_one_overwrite_rule_refuse_unless_forced(issued, tmp_path):
    d = issued
    before = (d / "cert.json").read_bytes()
    r = run("certify", "-M", 1, "-E", 4, "-l", "0.3", "--key", d / "keys" / "private.pem", "-o", d / "cert.json")
    # refused before any computation: one line, no progress, the file untouched
    assert r.returncode == 2 and r.stderr == f"sigmacert: error: {d / 'cert.json'} exists; refusing to overwrite " \
                                              f"it (--force replaces it)\n", r.stderr
    assert (d / "cert.json").read_bytes() == before
    out = tmp_path / "c.json"
    r = run("certify", "-M", 1, "-E", 4, "-l", "0.3", "--key", d / "keys" / "private.pem", "-o", out, "--quiet")
    assert r.returncode == 0 and out.exists()
    first = out.read_bytes()
    r = run("certify", "-M", 1, "-E", 4, "-l", "0.3", "--key", d / "keys" / "private.pem", "-o", out, "--quiet",
            "--force", "--one-sided")
    assert r.returncode == 0 and out.read_bytes() != first and b"lower" not in out.read_bytes()
    # report -o
    html = tmp_path / "r.html"
    assert run("report", out, "--key", d / "keys" / "public.pem", "-o", html, "--quiet").returncode == 0
    r = run("report", out, "--key", d / "keys" / "public.pem", "-o", html, "--quiet")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "refusing to overwrite" in r.stderr
    assert run("report", out, "--key", d / "keys" / "public.pem", "-o", html, "--force", "--quiet").returncode == 0
    # keygen
    keys = tmp_path / "keys"
    kid = json.loads(run("keygen", "-o", keys, "--json").stdout)["keyid"]
    r = run("keygen", "-o", keys)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--force replaces it" in r.stderr
    again = json.loads(run("keygen", "-o", keys, "--force", "--json").stdout)["keyid"]
    assert again != kid and (keys / "private.pem").stat().st_mode & 0o777 == 0o600
    # Certificate.write
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from certifier.errors import ParameterError
    cert = sigmacert.certify(1, 4, "0.3", key=Ed25519PrivateKey.generate(), two_sided=False)
    with pytest.raises(ParameterError, match="refusing to overwrite"):
        cert.write(str(out))
    assert out.read_bytes() != cert.envelope + b"\n"
    cert.write(str(out), force=True)
    assert out.read_bytes() == cert.envelope + b"\n"


def test_train_checks_its_arguments_before_verifying(tmp_path):
    """An unknown data set is named at once; the certificate (here: missing) is not even read."""
    r = run("train", "--certificate", tmp_path / "missing.json", "--key", PUBLIC, "--dataset", "mnist",
            "-o", tmp_path / "out")
    assert r.returncode == 2 and r.stderr == "sigmacert: error: unknown dataset 'mnist' (available: digits)\n", r.stderr


# ------------------------------------------------------------------ docs that drift

def test_readme_names_the_plot_urls_the_service_serves():
    from service.routes import reports
    assert "/v1/certificates/{jid}/plots/{name}.svg" in Path(reports.__file__).read_text()
    assert set(reports.PLOTS) == {"tv", "tradeoff", "epsilon", "profile", "tradeoff-kind"}  # the last two: dp, tpr
    assert "`/v1/certificates/ID/plots/tv.svg`" in README
    for name in reports.PLOTS:
        assert f"/plots/{name}.svg`" in README, name


def test_the_service_walkthrough_runs_as_documented(tmp_path):
    """docs/service.md: the POST, then envelope, report, a plot and the issuer key from /v1/keys; the
    certificate verifies offline against that key."""
    from service_fixtures import serving, wait_done
    text = (ROOT / "docs" / "service.md").read_text()
    block = text.split("```console", 1)[1].split("```", 1)[0]
    joined = re.sub(r"\\\n\s+", " ", block)
    cmds = [re.sub(r"\s+#\s.*$", "", ln[2:]).strip() for ln in joined.splitlines() if ln.startswith("$ ")]
    post = next(c for c in cmds if "-X POST" in c)
    after = cmds[cmds.index(next(c for c in cmds if c.startswith("ID="))) + 1:]
    assert any(c.endswith("> issuer.pem") and "/v1/keys" in c for c in after)
    assert after[-1] == "sigmacert-verify cert.json --key issuer.pem"
    with serving("sigmacert-walk-") as srv:
        host = srv.url.split("://", 1)[1].rstrip("/")
        env = f"export TOKEN={srv.token}; source {VENV_BIN / 'activate'}; "
        r = shell(env + post.replace("localhost:8080", host), tmp_path)
        assert r.returncode == 0, r.stderr
        jid = json.loads(r.stdout)["id"]
        assert wait_done(srv, jid, timeout=600)["status"] == "done"
        script = env + f"ID={jid}; " + " && ".join(c.replace("localhost:8080", host) for c in after)
        r = shell(script, tmp_path)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr)
    assert re.search(r"ACCEPT \(accepted\): TV <= \S+ <= target 0\.1 at sigma 1\.426215, M=100, E=10", r.stdout)
    assert (tmp_path / "issuer.pem").read_text().startswith("-----BEGIN PUBLIC KEY-----")
    assert (tmp_path / "tv.svg").read_text().lstrip().startswith(("<?xml", "<svg"))
    assert "ACCEPT" in (tmp_path / "report.html").read_text()


# ------------------------------------------------------------------ make demo / make test

def make_n(target: str, venv: Path) -> list[str]:
    r = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def pip_installs(lines: list[str]) -> list[str]:
    return [x for x in lines if "-m pip install" in x and "--upgrade pip" not in x]


def test_make_demo_installs_only_what_the_demo_needs_and_says_each_step(tmp_path):
    venv = tmp_path / ".venv"
    demo = make_n("demo", venv)
    (install,) = pip_installs(demo)
    assert install.endswith('-e ".[report]"')  # the core and matplotlib: no torch, jax or dask
    if any(Path("/opt/wheels").glob("torch-*")):
        assert "--find-links /opt/wheels" in install  # the local CPU torch wheels stay in use
    assert " -q" not in " ".join(demo)  # pip's own progress is shown, not silenced
    said = [x for x in demo if x.startswith("printf '\\n== %s\\n'")]
    assert len(said) >= 8 and any("installing sigmacert with the extra [report]" in x for x in said)
    assert any("source " in x and "/bin/activate" in x for x in said)  # where the commands are
    assert [x for x in said if "demo " in x and "/5:" in x][-1].count("5/5") == 1
    (full,) = pip_installs(make_n("test", venv))
    extras = re.search(r'-e "\.\[([^\]]*)\]"', full).group(1).split(",")
    assert {"test", "train", "service", "torch", "jax", "report", "atlas", "bench"} <= set(extras)


def test_make_demo_then_make_test_installs_the_rest_and_then_nothing(tmp_path):
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    (venv / ".installed-demo").write_text("")  # what `make demo` leaves
    assert pip_installs(make_n("demo", venv)) == []
    (full,) = pip_installs(make_n("test", venv))  # the extras of the tests are installed on top
    assert "torch" in full and "jax" in full
    (venv / ".installed-test").write_text("")
    assert pip_installs(make_n("test", venv)) == [] and pip_installs(make_n("demo", venv)) == []


def test_the_documented_atlas_heatmap_shows_the_documented_sigmas():
    """docs/atlas45-heatmap.svg labels each cell with the certified decimal of the table in docs/atlas.md."""
    doc = (ROOT / "docs" / "atlas.md").read_text()
    rows = re.findall(r"^\| (\d+) \| (\d+) \| (0\.\d+) \| (\d+\.\d+) \| (\d+\.\d+) \| (0\.\d+) \|", doc, re.M)
    assert len(rows) == 45
    svg = (ROOT / "docs" / "atlas45-heatmap.svg").read_text()
    assert all(f">{sigma}</text>" in svg for _, _, _, sigma, _, _ in rows)  # as text, never rounded
