"""The stated target domain over HTTP (a real `sigmacert serve` on loopback): POST /v1/certificates, POST /v1/audits
and GET /v1/sigma refuse the cells just outside it with 422 and the one line every face gives
(tests/certifier/test_domain.py), and take the cells just inside."""
from __future__ import annotations

import pytest
from service_fixtures import serving

import sigmacert
from certifier.errors import ParameterError

RUN = {"steps": 100, "epochs": 10}
OUTSIDE = [{"epsilon": "0.009", "delta": "0.00001"}, {"epsilon": "20.5", "delta": "0.00001"},
           {"epsilon": "1", "delta": "0.0000000000001"}, {"epsilon": "1", "delta": "0.2"},
           {"fpr": "0.000000001", "tpr": "0.01"}, {"fpr": "0.01", "tpr": "0.01"}]


@pytest.fixture(scope="module")
def svc():
    with serving("sigmacert-domain-") as srv:
        yield srv


def _api_line(target: dict) -> str:
    with pytest.raises(ParameterError) as err:
        sigmacert.exact_sigma(**RUN, **target)
    return str(err.value)


@pytest.mark.parametrize("target", OUTSIDE, ids=lambda t: ",".join(f"{k}={v}" for k, v in t.items()))
def test_outside_is_422_with_the_faces_line(svc, target):
    line = _api_line(target)
    for r in (svc.http.post("/v1/certificates", json={**RUN, **target}, headers=svc.auth),
              svc.http.post("/v1/audits", json={**RUN, **target, "sigma": "1"}, headers=svc.auth),
              svc.http.get("/v1/sigma", params={**RUN, **target})):
        assert r.status_code == 422, r.text
        assert r.json()["detail"] == line


def test_inside_is_answered(svc):
    r = svc.http.get("/v1/sigma", params={**RUN, "epsilon": "20", "delta": "0.1"}, timeout=120)
    assert r.status_code == 200, r.text
    assert r.json()["exact"] == str(sigmacert.exact_sigma(**RUN, epsilon="20", delta="0.1"))
