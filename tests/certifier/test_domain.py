"""The stated target domain (certifier.domain, docs/coverage.md): every face refuses the same cells just outside it
the same way -- one line naming the nearest target that works, before any long computation -- and takes the
cells just inside it. Faces: the CLI (`sigma`, `certify`, `audit`), the Python API (`exact_sigma`, `certify`,
`audit`), the service's request reader (POST /v1/certificates and /v1/audits; the HTTP round trip is in
tests/service/test_validate_domain.py) and the Opacus slot (sigmacert.torch.get_noise_multiplier)."""
from __future__ import annotations

import time
from decimal import Decimal
from fractions import Fraction

import pytest
from flint import fmpq

import sigmacert
from certifier import domain
from certifier.domain import OutsideDomainError
from certifier.errors import ParameterError
from certifier.run import Run
from certifier.targets import DP, TPR, TV
from service.routes.audits import AuditRequest, audit_request
from service.validate import CertificateRequest, Limits, normalise
from sigmacert.cli import main

RUN = {"steps": 100, "epochs": 10}
# (run, target, the refusal's words): the corners just outside the stated domain
OUTSIDE = [
    (RUN, {"epsilon": "0.009", "delta": "1e-5"},
     "epsilon = 0.009 lies below the stated domain, epsilon in [0.01, 20]; the nearest target that works is "
     "epsilon = 0.01, delta = 1e-5"),
    (RUN, {"epsilon": "20.5", "delta": "1e-5"},
     "epsilon = 20.5 lies above the stated domain, epsilon in [0.01, 20]; the nearest target that works is "
     "epsilon = 20, delta = 1e-5"),
    (RUN, {"epsilon": "1", "delta": "1e-13"},
     "delta = 1e-13 lies below the stated domain, delta in [1e-12, 0.1]; the nearest target that works is "
     "epsilon = 1, delta = 1e-12"),
    (RUN, {"epsilon": "1", "delta": "0.2"},
     "delta = 0.2 lies above the stated domain, delta in [1e-12, 0.1]; the nearest target that works is "
     "epsilon = 1, delta = 0.1"),
    (RUN, {"fpr": "1e-9", "tpr": "0.01"},
     "fpr = 1e-9 lies below the stated domain, fpr in [1e-8, 0.5]; the nearest target that works is "
     "fpr = 1e-8, tpr = 0.01"),
    (RUN, {"fpr": "0.01", "tpr": "0.01"}, "tpr must exceed fpr"),
    (RUN, {"fpr": "0.01", "tpr": "0.005"}, "the nearest target that works is fpr = 0.01, tpr = 0.02"),
    ({"steps": 100, "epochs": 20000}, {"epsilon": "1", "delta": "1e-5"},
     "E = 20000 lies outside the stated domain E in [1, 10^4]; the nearest cell that works has E = 10000"),
    ({"stages": "100x5,200x20000"}, {"epsilon": "1", "delta": "1e-5"},
     "stage 2: E = 20000 lies outside the stated domain E in [1, 10^4]"),
]
# the corners just inside: refused by nobody (the exact sigma's own answers are timed in benchmarks)
INSIDE = [
    (RUN, {"epsilon": "0.01", "delta": "1e-5"}), (RUN, {"epsilon": "20", "delta": "1e-5"}),
    (RUN, {"epsilon": "1", "delta": "1e-12"}), (RUN, {"epsilon": "1", "delta": "0.1"}),
    (RUN, {"fpr": "1e-8", "tpr": "0.01"}), (RUN, {"fpr": "0.5", "tpr": "0.51"}),
    ({"steps": 10**7, "epochs": 1}, {"epsilon": "1", "delta": "1e-5"}),
    ({"steps": 100, "epochs": 10**4}, {"epsilon": "1", "delta": "1e-5"}),
    ({"stages": "100x5,200x10000"}, {"epsilon": "1", "delta": "1e-5"}),
]


def _flags(run: dict, target: dict) -> list[str]:
    out = [] if "stages" not in run else ["--stages", run["stages"]]
    out += [] if "steps" not in run else ["-M", str(run["steps"]), "-E", str(run["epochs"])]
    return out + [x for k, v in target.items() for x in (f"--{k}", v)]


def _message(fn) -> str:
    t = time.process_time()
    with pytest.raises(ParameterError) as err:
        fn()
    assert time.process_time() - t < 1.0                   # before any long computation
    return str(err.value)


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    from certifier.certificate.keys import keygen
    d = tmp_path_factory.mktemp("keys")
    keygen(str(d / "k"))
    return str(d / "k" / "private.pem")


@pytest.mark.parametrize("run,target,words", OUTSIDE)
def test_every_face_refuses_just_outside_in_the_same_line(run, target, words, capsys, tmp_path, key):
    api = _message(lambda: sigmacert.exact_sigma(**run, **target))
    assert words in api and "\n" not in api
    assert _message(lambda: sigmacert.certify(**run, **target)) == api
    for argv in (["sigma", *_flags(run, target)],
                 ["certify", *_flags(run, target), "--key", key, "-o", str(tmp_path / "c.json"), "--quiet"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"sigmacert: error: {api}"]
    if "stages" not in run:                                # audits are of a block
        assert _message(lambda: sigmacert.audit(**run, sigma="1", **target)) == api
        assert main(["audit", *_flags(run, target), "--sigma", "1"]) == 2
        assert capsys.readouterr().err.strip().splitlines() == [f"sigmacert: error: {api}"]
    service = Limits(max_epochs=10**5)                    # the service's own smaller limits aside
    if "stages" not in run:
        assert _message(lambda: normalise(CertificateRequest(**run, **target), service)) == api
        assert _message(lambda: audit_request(AuditRequest(**run, **target, sigma="1"), service)) == api


@pytest.mark.parametrize("run,target,words", [c for c in OUTSIDE if "epsilon" in c[1] and "steps" in c[0]])
def test_the_opacus_slot_refuses_the_same_cells(run, target, words):
    torch = pytest.importorskip("sigmacert.torch")
    api = _message(lambda: sigmacert.exact_sigma(**run, **target))
    got = _message(lambda: torch.get_noise_multiplier(
        target_epsilon=target["epsilon"], target_delta=target["delta"], sample_rate=1 / run["steps"],
        epochs=run["epochs"], accountant="random_allocation"))
    assert got == api


def test_outside_m_is_refused_by_every_face():
    for fn in (lambda: sigmacert.exact_sigma(2 * 10**7, 1, epsilon=1, delta="1e-5"),
               lambda: sigmacert.exact_sigma(stages="100x5,20000000x2", epsilon=1, delta="1e-5"),
               lambda: normalise(CertificateRequest(steps=2 * 10**7, epochs=1, epsilon="1", delta="1e-5"), Limits())):
        assert "10000000" in _message(fn) or "at most" in _message(fn)


@pytest.mark.parametrize("run,target", INSIDE)
def test_every_face_takes_just_inside(run, target):
    r = Run.composed(run["stages"]) if "stages" in run else Run.block(run["steps"], run["epochs"])
    t = DP(target["epsilon"], target["delta"]) if "epsilon" in target else TPR(target["fpr"], target["tpr"])
    domain.check(r, t, certify=True)                        # no exception: the one check every face asks
    assert t.nearest_in_domain() == t
    if "steps" in run and run["steps"] <= 1000 and run["epochs"] <= 1000:
        normalise(CertificateRequest(**run, **target), Limits())
        audit_request(AuditRequest(**run, **target, sigma="1"), Limits())


def test_an_inside_corner_answers_alike_in_api_cli_and_the_opacus_slot(capsys):
    s = sigmacert.exact_sigma(100, 10, epsilon=20, delta="0.1")
    assert main(["sigma", "-M", "100", "-E", "10", "--epsilon", "20", "--delta", "0.1", "--json"]) == 0
    assert f'"exact": "{s}"' in capsys.readouterr().out
    torch = pytest.importorskip("sigmacert.torch")
    got = torch.get_noise_multiplier(target_epsilon=20, target_delta=0.1, sample_rate=0.01, epochs=10,
                                     accountant="random_allocation")
    assert got >= float(s) and got - float(s) < 1e-12


def test_nearest_in_domain_is_the_clamp_and_lies_inside():
    assert DP("25", "0.5").nearest_in_domain() == DP("20", "0.1")
    assert DP("0", "0").nearest_in_domain() == DP("0.01", "1e-12")
    assert TPR("0.7", "0.6").nearest_in_domain() == TPR("0.5", "0.6")
    assert TPR("1e-9", "1e-9").nearest_in_domain() == TPR("1e-8", "2e-8")
    assert TPR("0.1", "1").nearest_in_domain() == TPR("0.1", "0.99")
    for t in (DP("25", "0.5"), TPR("0.7", "0.6"), TPR("1e-9", "1e-9"), TV("0.00001"), TV("0.9995")):
        t.nearest_in_domain().check_domain()
    assert TV("0.00001").nearest_in_domain() == TV("0.0001")
    TV("0.00001").check_domain(certify=False)             # the exact sigma of a TV target takes any lambda


def test_a_tv_target_keeps_its_certify_domain_and_its_exact_sigma():
    assert sigmacert.exact_sigma(100, 10, "0.00001") > 0                  # numerics only, as always
    assert "lambda = 1e-5 lies below the stated domain" in _message(lambda: sigmacert.certify(100, 10, "0.00001"))


def test_below_the_numerics_floor_is_named_from_one_evaluation():
    # TPR 0.9999999 at FPR 1/2, M = 10^7, E = 1: inside the parameters' intervals, but its exact sigma lies
    # below the pair's sigma 0.1; the nearest target is read off the functional at sigma 0.1 (one evaluation)
    cell = {"steps": 10**7, "epochs": 1, "fpr": "0.5", "tpr": "0.9999999"}
    t0 = time.process_time()
    with pytest.raises(OutsideDomainError, match="lies below the pair's sigma 0.1") as err:
        sigmacert.exact_sigma(**cell)
    assert time.process_time() - t0 < 3.0
    words = str(err.value)
    assert "\n" not in words and "the nearest target that works is fpr = 0.5, tpr = " in words
    nearest = words.split("tpr = ")[-1].split(" ")[0]
    assert "0.9999" < nearest < "0.9999999"
    assert sigmacert.exact_sigma(10**7, 1, fpr="0.5", tpr=nearest) >= Decimal("0.1")         # it works
    assert domain.is_below_floor(Run.block(100, 10**4, "fixed-bins"), fmpq(9))      # the pair: 9 / sqrt(10^4)
    assert not domain.is_below_floor(Run.block(100, 10**4, "fixed-bins"), fmpq(10))
    with pytest.raises(OutsideDomainError, match="give a sigma whose pair's sigma is >= 0.1"):
        sigmacert.certify(100, 1, epsilon=1, delta="1e-5", sigma="0.05")


def test_values_are_shown_as_written_and_rounded_toward_the_domain():
    assert [domain.words(fmpq(*x)) for x in ((1, 10**5), (15, 10**6), (1, 10**12), (1, 10), (20, 1))] == \
        ["1e-5", "1.5e-5", "1e-12", "0.1", "20"]
    assert domain.round_down(0.123456) == fmpq(123, 1000)
    assert domain.round_down(0.9999998712) == fmpq(999999871, 10**9)     # three digits of 1 - x near 1
    for x in (3.2e-9, 0.5, 0.77777, 0.99999999):
        q = Fraction(x)                                    # the float exactly
        r = domain.round_down(x)
        assert Fraction(int(r.p), int(r.q)) <= q and Fraction(int(r.p), int(r.q)) > q * Fraction(9, 10)
