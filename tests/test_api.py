"""The public Python API (`import sigmacert`): one coercion for every number, typed results, one
exception hierarchy, and certify -> verify end to end."""
from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

import sigmacert
from certifier.certificate.keys import keygen
from certifier.numerics import closed_form as cf


@pytest.mark.parametrize("target", ["0.1", 0.1, Decimal("0.1"), Fraction(1, 10)])
def test_exact_sigma_takes_every_number_type_exactly(target):
    assert sigmacert.exact_sigma(100, 10, target) == Decimal("1.426215")  # Table 4


def test_closed_form_sigma_is_rounded_up_and_still_a_bound():
    s = sigmacert.closed_form_sigma(250, 20, "0.1")
    assert isinstance(s, Decimal) and s.as_tuple().exponent >= -6
    assert cf.tv_bound(250, 20, float(s)) <= 0.1 < cf.tv_bound(250, 20, float(s - Decimal("0.000001")))


def test_exact_tv_returns_plain_floats():
    r = sigmacert.exact_tv(100, 10, "1.426215")
    assert type(r.tv) is float and type(r.error) is float
    assert abs(r.tv - 0.0999999380) < 1e-9 and r.error < 1e-9


@pytest.mark.parametrize("call", [
    lambda: sigmacert.exact_sigma(0, 10, "0.1"),
    lambda: sigmacert.exact_sigma(100, 10, "1.5"),
    lambda: sigmacert.exact_sigma(100, 10, True),
    lambda: sigmacert.exact_sigma(100, 10, Fraction(1, 3)),
    lambda: sigmacert.exact_sigma(100.5, 10, "0.1"),
    lambda: sigmacert.exact_tv(100, 10, "-1"),
    lambda: sigmacert.exact_tv(100, 10, float("nan")),
    lambda: sigmacert.closed_form_sigma(100, 10, [0.1]),
])
def test_bad_input_is_a_parameter_error(call):
    with pytest.raises(sigmacert.ParameterError) as info:
        call()
    assert isinstance(info.value, sigmacert.SigmacertError) and "\n" not in str(info.value)


def test_errors_share_one_base():
    for cls in (sigmacert.ParameterError, sigmacert.CannotCertify, sigmacert.NumericsUnreliable,
                sigmacert.KeyFileError, sigmacert.EnvelopeError):
        assert issubclass(cls, sigmacert.SigmacertError)


def test_certify_sign_verify_and_tamper(tmp_path):
    keygen(str(tmp_path / "keys"))
    cert = sigmacert.certify(4, 3, "0.3", "2", key=tmp_path / "keys" / "private.pem", two_sided=False)
    assert cert.sigma == Decimal("2") and cert.bound <= Decimal("0.3") and not cert.two_sided
    assert cert.envelope is not None and len(cert.keyid) == 64
    v = sigmacert.verify(cert, tmp_path / "keys" / "public.pem")
    assert v.accepted and v.reason == "accepted" and v.replayed_bound <= cert.bound
    path = tmp_path / "cert.json"
    cert.write(str(path))
    assert sigmacert.verify(str(path), str(tmp_path / "keys" / "public.pem")).accepted
    other = tmp_path / "other"
    keygen(str(other))
    wrong = sigmacert.verify(str(path), str(other / "public.pem"))
    assert not wrong and wrong.reason != "accepted"


def test_certify_without_key_is_unsigned_and_cannot_be_written(tmp_path):
    cert = sigmacert.certify(1, 2, "0.2", "4", two_sided=False)
    assert cert.envelope is None and cert.predicate["claim"]["steps"] == 1
    with pytest.raises(sigmacert.ParameterError):
        cert.write(str(tmp_path / "x.json"))


def test_certify_a_sigma_that_misses_raises_cannot_certify():
    with pytest.raises(sigmacert.CannotCertify, match="exceeds the target"):
        sigmacert.certify(100, 10, "0.1", "1.42", two_sided=False)  # below the exact sigma 1.426215
