"""The certified dominating PLD (sigmacert.pld_export, certifier.bounds.dominating)."""
import json

import numpy as np
import pytest
from flint import fmpq, fmpz_poly

import sigmacert
from certifier.bounds.dominating import dominating_pmfs, hockey_stick
from certifier.bounds.fixedpoint import Poly
from certifier.bounds.privacy import Masses
from certifier.numerics.log_convolution import lattice_step, mean_density
from certifier.params import parse_decimal
from sigmacert.cli import main
from sigmacert.pld_export import dominating_run, read_pld, to_dp_accounting, write_pld

pytest.importorskip("dp_accounting")
from dp_accounting.pld import privacy_loss_distribution as dpl  # noqa: E402

M, E, SIGMA = 100, 10, "1.426215"


@pytest.fixture(scope="module")
def run():
    # the committed certificate's claim (artifacts/certificates/M100_E10.json): target 0.1
    return dominating_run(M, E, SIGMA, target="0.1")


@pytest.fixture(scope="module")
def law():
    from certifier.certify import certify
    out = certify(M, E, fmpq(1, 10), fmpq(1426215, 10**6))
    return out.law


def _numerical_profile(eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """delta_{Q||P}, delta_{P||Q} from the lattice density of ln L_M (numerical, not certified), E-fold
    by direct convolution."""
    h = lattice_step(M, float(SIGMA)) / 2
    d = mean_density(M, float(SIGMA), h)
    f = np.ones(1)
    for _ in range(E):  # direct sums of non-negative terms: no FFT round-off for e^s to amplify
        f = np.convolve(f, d.f * h)
    s = h * (E * d.lo + np.arange(f.size))
    qp = np.array([np.sum(f * np.maximum(np.exp(s) - np.exp(x), 0.0)) for x in eps])
    pq = np.array([np.sum(f * np.maximum(1.0 - np.exp(x + s), 0.0)) for x in eps])
    return qp, pq


def test_eps_of_the_pld_is_at_least_the_numerical_eps_and_near_the_certified_row(run):
    p = to_dp_accounting(run)
    eps = p.get_epsilon_for_delta(1e-5)
    grid = np.arange(0.90, 1.00, 1e-5)
    qp, pq = _numerical_profile(grid)
    exact_eps = grid[np.argmax(np.maximum(qp, pq) <= 1e-5)]
    assert 0.93 < exact_eps and eps >= exact_eps - 1e-5   # the numerical profile's own step
    row = float(run.privacy["epsilon_at_delta"]["1e-05"]["epsilon"])
    assert abs(eps - row) <= 0.01 * row
    # the committed certificate's row
    import base64
    cert = json.load(open("artifacts/certificates/M100_E10.json"))
    committed = json.loads(base64.b64decode(cert["payload"]))["predicate"]["privacy"]["epsilon_at_delta"]
    assert abs(eps - float(committed["1e-05"]["epsilon"])) <= 0.01 * eps
    assert eps >= float(committed["1e-05"]["epsilon"]) - 1e-4  # the row is on a 1e-4 grid


@pytest.mark.parametrize("eps", ["0", "0.5", "0.9428", "1.0814", "2", "4"])
def test_float_export_keeps_dominance_of_the_certified_bounds(law, eps):
    remove, add = dominating_pmfs(law, 1e-4)
    ms = Masses(Poly(law.off, fmpz_poly(law.masses)), law.eta, law.F)
    e = parse_decimal("eps", eps)
    assert hockey_stick(remove, e).lower() >= ms.dqp_ball(e).upper()
    assert hockey_stick(add, e).lower() >= ms.dpq_ball(e).upper()


def test_exported_masses_are_probabilities(law):
    for side in dominating_pmfs(law, 1e-4):
        total = sum(fmpq(*p.as_integer_ratio()) for p in side.probs.values())
        total += fmpq(*side.infinity_mass.as_integer_ratio())
        assert 1 <= total <= 1 + fmpq(1, 10**15)      # rounding only moved mass to +inf
        assert 0 < side.infinity_mass < 1e-6          # the recorded deletions, small at this grid
        assert all(p > 0 for p in side.probs.values())


def test_a_coarser_loss_grid_can_only_raise_delta(law):
    fine, _ = dominating_pmfs(law, 1e-4)
    coarse, _ = dominating_pmfs(law, 1e-3)
    e = fmpq(9428, 10**4)
    assert hockey_stick(coarse, e).lower() >= hockey_stick(fine, e).upper()


def test_composition_with_a_gaussian_event(run):
    p = to_dp_accounting(run)
    g = dpl.from_gaussian_mechanism(2.0, value_discretization_interval=1e-4)
    both = p.compose(g)
    e_p, e_g, e_both = (x.get_epsilon_for_delta(1e-5) for x in (p, g, both))
    assert e_both > max(e_p, e_g)
    assert e_both < e_p + e_g + 1e-3                    # basic composition, with delta doubled, is weaker
    quiet = p.compose(dpl.from_gaussian_mechanism(1000.0, value_discretization_interval=1e-4))
    assert abs(quiet.get_epsilon_for_delta(1e-5) - e_p) < 2e-3


def test_file_round_trip_and_cli(run, tmp_path, capsys):
    path = str(tmp_path / "run.pld.json")
    write_pld(run, path)
    a, b = to_dp_accounting(run), read_pld(path)
    assert a.get_epsilon_for_delta(1e-5) == b.get_epsilon_for_delta(1e-5)
    out = str(tmp_path / "cli.json")
    assert main(["pld", "-M", "20", "-E", "3", "-s", "1.2", "-o", out, "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["dp_accounting_epsilon"]["1e-05"] >= float(obj["certified_epsilon"]["1e-05"]) - 1e-4
    assert sigmacert.read_pld(out).get_epsilon_for_delta(1e-5) == obj["dp_accounting_epsilon"]["1e-05"]


@pytest.mark.parametrize("argv", [["pld", "-M", "1", "-E", "3", "-s", "1", "-o", "x.json"],
                                  ["pld", "-M", "5", "-E", "3", "-s", "1", "--interval", "0", "-o", "x.json"],
                                  ["pld", "-M", "5", "-E", "3", "-s", "-1", "-o", "x.json"]])
def test_cli_bad_input_one_line_exit_2(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_read_pld_rejects_other_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "sigmacert-pld/1", "value_discretization_interval": 1e-4}))
    with pytest.raises(sigmacert.ParameterError):
        read_pld(str(bad))
    bad.write_text("not json")
    with pytest.raises(sigmacert.ParameterError):
        read_pld(str(bad))


def _numerical_profile_stages(runs, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same numerical profile for a run in stages: the product's ln Lambda density on one lattice."""
    h = min(lattice_step(m, s) for m, _, s in runs) / 2
    f, lo = np.ones(1), 0
    for m, e, s in runs:
        d = mean_density(m, s, h)
        for _ in range(e):
            f, lo = np.convolve(f, d.f * h), lo + d.lo
    s = h * (lo + np.arange(f.size))
    qp = np.array([np.sum(f * np.maximum(np.exp(s) - np.exp(x), 0.0)) for x in eps])
    pq = np.array([np.sum(f * np.maximum(1.0 - np.exp(x + s), 0.0)) for x in eps])
    return qp, pq


def test_stages_pld_of_a_split_is_the_blocks(run):
    from sigmacert.pld_export import dominating_product
    split = to_dp_accounting(dominating_product([(100, 3), (100, 7)], SIGMA)).get_epsilon_for_delta(1e-5)
    block = to_dp_accounting(run).get_epsilon_for_delta(1e-5)
    assert block - 1e-4 <= split <= block * 1.01  # a coarser grid (margin 1e-3 x TV) than the certificate's


def test_stages_pld_dominates_the_numerical_profile_and_composes():
    from sigmacert.pld_export import dominating_product
    r = dominating_product("100x5@1.2,400x5@1.5")
    p = to_dp_accounting(r)
    eps = p.get_epsilon_for_delta(1e-5)
    grid = np.arange(0.80, 1.00, 1e-5)
    qp, pq = _numerical_profile_stages([(100, 5, 1.2), (400, 5, 1.5)], grid)
    exact_eps = grid[np.argmax(np.maximum(qp, pq) <= 1e-5)]
    assert 0.85 < exact_eps <= eps + 1e-5 and eps <= exact_eps * 1.01
    assert abs(eps - float(r.privacy["epsilon_at_delta"]["1e-05"]["epsilon"])) <= 2e-4
    both = p.compose(dpl.from_gaussian_mechanism(3.0, value_discretization_interval=1e-4))
    assert both.get_epsilon_for_delta(1e-5) > eps
    assert abs(sigmacert.pld(stages=[(100, 5, "1.2"), (400, 5, "1.5")]).get_epsilon_for_delta(1e-5) - eps) <= 1e-12


@pytest.mark.parametrize("kwargs", [dict(stages=[(100, 5)]), dict(stages=[(100, 5, "1")], sigma="1"),
                                    dict(stages=[(100, 5)], steps=100, sigma="1"), dict(stages="100x")])
def test_stages_pld_bad_calls(kwargs):
    with pytest.raises(sigmacert.ParameterError):
        sigmacert.pld(**kwargs)


def test_cli_stages_file_round_trip(tmp_path, capsys):
    out = str(tmp_path / "stages.json")
    assert main(["pld", "--stages", "10x2@1.2,40x2@1.5", "-o", out, "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["stages"] == "10x2@1.2,40x2@1.5"
    assert read_pld(out).get_epsilon_for_delta(1e-5) == obj["dp_accounting_epsilon"]["1e-05"]
    assert main(["pld", "--stages", "10x2,40x2", "-o", out]) == 2        # no sigma anywhere
    assert main(["pld", "--stages", "10x2@1", "-M", "3", "-o", out]) == 2


def test_eps_of_the_pld_is_at_least_the_exact_eps(run):
    # the exact eps of the target kinds' numerics (sigmacert.exact_privacy), an independent route
    exact = sigmacert.exact_privacy(M, E, SIGMA, delta=[1e-5, 1e-6]).epsilon
    p = to_dp_accounting(run)
    for d in (1e-5, 1e-6):
        eps = p.get_epsilon_for_delta(d)
        assert exact[d].value + exact[d].error <= eps <= 1.01 * exact[d].value
