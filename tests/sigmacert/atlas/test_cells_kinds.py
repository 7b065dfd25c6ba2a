"""`sigmacert atlas` with a dp or tpr target kind (--epsilon/--delta, --fpr/--tpr; exactly one kind per call):
cells, names, index entries, the heatmap naming the kind; end to end on a local Dask cluster on loopback.

The end-to-end run has one dp cell, (10, 2) at eps = 0.5, delta = 1e-4 (the face's cell), which certifies
two-sided in format v4 at the kind's exact sigma in about 24 CPU seconds, and is reused by a second run.
A cell where method v1 does not apply, (4, 2) at eps = 1, delta = 0.01, certifies by method v2 (about 2 CPU
seconds); a kind the certifier refuses (eps = 101, an unknown kind) is a reason from the worker function at once.
"""
from __future__ import annotations

import json
from decimal import Decimal

import pytest

import sigmacert
from certifier.certificate.keys import keygen
from certifier.errors import ParameterError
from sigmacert.atlas.cells import Cell, grid_cells
from sigmacert.atlas.heatmap import render
from sigmacert.atlas.index import cell_of, certified_entry, failed_entry, index_document, pending_entry
from sigmacert.atlas.progress import cell_line
from sigmacert.atlas.work import certify_cell
from sigmacert.cli import main

DP = Cell(10, 2, "0.0001", "dp", "0.5")
RA = "random-allocation"


@pytest.fixture(scope="module")
def keydir(tmp_path_factory):
    d = tmp_path_factory.mktemp("atlas-kind-keys") / "k"
    keygen(str(d))
    return d


def test_kind_grids_are_parsed_exactly_and_named():
    cells = grid_cells("10,1", "2", epsilon="0.50", delta="1e-4,0.001")
    assert cells == [Cell(1, 2, "0.0001", "dp", "0.5"), Cell(1, 2, "0.001", "dp", "0.5"), DP,
                     Cell(10, 2, "0.001", "dp", "0.5")]
    assert DP.file == "certificates/M10_E2_dp_eps0.5_delta0.0001.json" and DP.claim_kind() == {"name": "dp",
                                                                                                "epsilon": "0.5"}
    t = grid_cells("10", "2", fpr="0.001", tpr="0.002,0.003")
    assert [c.name for c in t] == ["M10_E2_tpr_fpr0.001_tpr0.002", "M10_E2_tpr_fpr0.001_tpr0.003"]
    assert grid_cells("2", "4", "0.1") == [Cell(2, 4, "0.1")] and Cell(2, 4, "0.1").name == "M2_E4_L0.1"  # tv as ever
    for kw, words in ((dict(targets="0.1", epsilon="1", delta="0.1"), "exactly one target"),
                      (dict(epsilon="1"), "epsilon needs delta"), (dict(tpr="0.2"), "tpr needs fpr"),
                      (dict(), "exactly one target"), (dict(fpr="0.01", tpr="0.005"), "tpr must exceed fpr"),
                      (dict(fpr="0.01,0.3", tpr="0.2"), "tpr must exceed fpr"),      # every pair is checked
                      (dict(epsilon="101", delta="0.1"), "epsilon = 101 lies above the stated domain"),
                      (dict(epsilon="1", delta="1"), "delta"),
                      (dict(epsilon="1,,2", delta="0.1"), "comma-separated")):
        with pytest.raises(ParameterError, match=words):
            grid_cells("1", "2", **kw)


@pytest.mark.parametrize("args,words", [
    (["--epsilon", "1"], "epsilon needs delta"),
    (["--epsilon", "1", "--delta", "1e-5", "-l", "0.1"], "exactly one target"),
    (["--fpr", "0.1", "--tpr", "0.05"], "tpr must exceed fpr"),
    (["--fpr", "0.1", "--tpr", "0.2", "--epsilon", "1", "--delta", "0.1"], "exactly one target"),
    ([], "exactly one target"),
])
def test_the_cli_takes_exactly_one_kind_in_one_line_exit_2(args, words, keydir, tmp_path, capsys):
    rc = main(["atlas", "-M", "1", "-E", "2", *args, "--key", str(keydir / "private.pem"), "-o", str(tmp_path / "a")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and words in err, err
    assert not (tmp_path / "a").exists()


def _claim(kind: dict, target: str) -> dict:
    return {"mechanism": "dp-sgd/random-allocation", "adjacency": "zero-out", "steps": 10, "epochs": 2,
            "sigma": "2.732035", "target": target, "kind": kind, "scheme": RA, "statement": "s"}


def test_a_kind_cell_matches_only_its_own_kind_and_parameters():
    assert DP.matches(_claim({"name": "dp", "epsilon": "0.50"}, "1e-4"), RA)
    assert not DP.matches(_claim({"name": "dp", "epsilon": "1"}, "0.0001"), RA)
    assert not DP.matches(_claim({"name": "dp", "epsilon": "0.5"}, "0.001"), RA)
    assert not DP.matches(_claim({"name": "tpr", "fpr": "0.5"}, "0.0001"), RA)
    tv = {k: v for k, v in _claim({}, "0.0001").items() if k != "kind"}
    assert not DP.matches(tv, RA) and Cell(10, 2, "0.0001").matches(tv, RA)     # a tv cell: no kind stated
    assert not Cell(10, 2, "0.0001").matches(_claim({"name": "dp", "epsilon": "0.5"}, "0.0001"), RA)


def _v4_predicate():
    return {"claim": _claim({"name": "dp", "epsilon": "0.5"}, "0.0001"), "upper": {"bound": "0.0000999997676"},
            "lower": {"sigma_low": "2.732034", "bound_lower": "0.0001000002"}}


def test_kind_index_entries_name_the_kind_and_read_the_v4_sides():
    ok = certified_entry(DP, RA, _v4_predicate(), "ab" * 32, {"seconds": 20.0}, False)
    assert ok["kind"] == "dp" and ok["epsilon"] == "0.5" and ok["delta"] == "0.0001" and "lambda" not in ok
    assert ok["bound"] == "0.0000999997676" and ok["sigma_low"] == "2.732034" and ok["two_sided"]
    assert cell_of(ok) == DP and cell_of(pending_entry(Cell(2, 4, "0.1"), RA)) == Cell(2, 4, "0.1")
    tpr = Cell(10, 2, "0.002", "tpr", "0.001")
    bad = failed_entry(tpr, RA, "refused", 0.1)
    assert bad["fpr"] == "0.001" and bad["tpr"] == "0.002" and cell_of(bad) == tpr
    assert cell_line(ok).startswith("M=10 E=2 dp epsilon=0.5 delta=0.0001: certified sigma 2.732035")
    doc = index_document([ok, pending_entry(Cell(1, 2, "0.0001", "dp", "0.5"), RA)], scheme=RA, keyid="k",
                         version="v", seconds=1.0, heatmap="h.svg")
    assert doc["kind"] == "dp" and doc["grid"] == {"steps": [1, 10], "epochs": [2], "targets": ["0.0001"],
                                                    "epsilon": ["0.5"]}
    tv = index_document([pending_entry(Cell(2, 4, "0.1"), RA)], scheme=RA, keyid="k", version="v", seconds=1.0,
                        heatmap="h.svg")
    assert "kind" not in tv and tv["grid"]["targets"] == ["0.1"]          # a tv index is as it was


def test_the_heatmap_names_the_kind_and_one_panel_per_target():
    entries = [certified_entry(DP, RA, _v4_predicate(), "ab" * 32, {"seconds": 20.0}, False),
               failed_entry(Cell(10, 2, "0.001", "dp", "0.5"), RA, "refused", 0.1)]
    svg = render(entries, RA).decode()
    assert svg == render(entries, RA).decode()
    assert "(ε, δ)-DP, both directions" in svg and "ε = 0.5, δ = 0.0001" in svg and "ε = 0.5, δ = 0.001" in svg
    assert "2.732035" in svg and "×" in svg and "λ = " not in svg
    t = render([failed_entry(Cell(10, 2, "0.002", "tpr", "0.001"), RA, "refused", 0.1)], RA).decode()
    assert "TPR ≤ β at FPR α" in t and "FPR = 0.001, TPR ≤ 0.002" in t


def test_a_dp_atlas_on_a_local_loopback_cluster_maps_the_exact_sigma(keydir, tmp_path, capsys):
    out = tmp_path / "dp"
    args = ["atlas", "-M", "10", "-E", "2", "--epsilon", "0.5", "--delta", "1e-4", "--key",
            str(keydir / "private.pem"), "-o", str(out), "--workers", "1", "--json", "--quiet"]
    rc = main(args)
    o = json.loads(capsys.readouterr().out)
    assert rc == 0 and o["kind"] == "dp" and (o["certified"], o["failed"]) == (1, 0), o
    index = json.loads((out / "index.json").read_text())
    assert index["kind"] == "dp" and index["grid"]["epsilon"] == ["0.5"]
    cell = next(c for c in index["cells"] if c["status"] == "certified")
    assert (cell["M"], cell["E"], cell["epsilon"], cell["delta"]) == (10, 2, "0.5", "0.0001") and cell["two_sided"]
    exact = sigmacert.exact_sigma(10, 2, epsilon="0.5", delta="1e-4")
    assert Decimal(cell["sigma"]) >= exact and Decimal(cell["sigma_low"]) < exact        # the bracket of the kind
    assert Decimal(cell["bound"]) <= Decimal("0.0001")
    cert = out / cell["file"]
    assert cert.name == "M10_E2_dp_eps0.5_delta0.0001.json"
    heat = (out / "heatmap.svg").read_text()
    assert "(ε, δ)-DP" in heat and cell["sigma"] in heat
    # a second run is an audit: the independent verifier replays the certificate on the worker, and the cell is
    # reused only when it ACCEPTs and the claim is the cell's kind and parameters (engine.on_verify)
    rc = main(args)
    again = json.loads(capsys.readouterr().out)
    assert rc == 0 and again["reused"] == 1 and again["certified"] == 1


def test_a_kind_the_certifier_refuses_at_a_cell_is_a_reason():
    r = certify_cell(4, 2, "0.01", RA, "dp", "1")         # method v1 does not apply here: method v2 does
    assert r["ok"] is True and r["two_sided"] and r["predicate"]["method"]["version"] == 2, r.get("reason")
    r = certify_cell(4, 2, "0.01", RA, "dp", "101")
    assert r["ok"] is False and "epsilon" in r["reason"], r
    r = certify_cell(4, 2, "0.01", RA, "renyi", "1")
    assert r["ok"] is False and "renyi" in r["reason"], r


@pytest.mark.parametrize("cell", [DP, Cell(10, 2, "0.002", "tpr", "0.001")])
def test_the_longer_kind_title_fits_a_one_panel_grid(cell):
    import matplotlib

    from sigmacert.atlas import heatmap
    entry = failed_entry(cell, RA, "refused", 0.1)
    with matplotlib.rc_context(heatmap.RC):
        fig = heatmap.figure([entry], RA)
        box, title = fig.bbox, fig._suptitle.get_window_extent(fig._get_renderer())
        assert "certified σ for" in fig._suptitle.get_text()
        assert box.x0 <= title.x0 and title.x1 <= box.x1 and title.y1 <= box.y1, (title, box)
