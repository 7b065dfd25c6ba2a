"""A claim's shape picks its writer and its predicate type (certifier.claim, certificate.stages, envelope)."""
import pytest
from flint import fmpq

from certifier.certificate.envelope import (
    PREDICATE_TYPE,
    PREDICATE_TYPE_V2,
    PREDICATE_TYPE_V3,
    PREDICATE_TYPE_V4,
    PREDICATE_TYPE_V5,
    predicate_type,
)
from certifier.certificate.stages import StagesClaim, stages_claim, stages_claim_json
from certifier.claim import RANDOM_ALLOCATION, Claim
from certifier.errors import ParameterError


def test_a_claim_in_stages_writes_format_v5_and_a_block_its_own():
    c = stages_claim(((100, 5), (400, 5)), fmpq(6, 5), fmpq(1, 10))
    assert isinstance(c, StagesClaim) and c.to_json(5) == stages_claim_json(c, 5) and "stages" in c.to_json(5)
    with pytest.raises(ParameterError, match="format v5"):
        c.to_json(4)
    block = Claim(RANDOM_ALLOCATION, 100, 10, fmpq(6, 5), fmpq(1, 10))
    assert block.stages == () and "stages" not in block.to_json(4)
    with pytest.raises(TypeError):                     # a block claim cannot hold stages
        Claim(RANDOM_ALLOCATION, 100, 10, fmpq(6, 5), fmpq(1, 10), stages=((100, 10),))


@pytest.mark.parametrize("stages,sigma", [((), fmpq(1)), (((1, 2, fmpq(1)), (1, 2)), None),
                                          (((1, 2, fmpq(1)),), fmpq(1)), (((1, 2, fmpq(-1)),), None),
                                          (((1, 2, 1.0),), None)])
def test_a_claim_in_stages_refuses_a_bad_sigma_cover(stages, sigma):
    with pytest.raises(ParameterError, match="at least one stage|positive exact sigma on every stage"):
        stages_claim(stages, sigma, fmpq(1, 10))


@pytest.mark.parametrize("predicate,kind", [
    ({"claim": {"stages": [], "kind": {}, "scheme": "x"}, "lower": {}}, PREDICATE_TYPE_V5),
    ({"claim": {"kind": {}, "scheme": "x"}}, PREDICATE_TYPE_V4),
    ({"claim": {"scheme": "x"}, "lower": {}}, PREDICATE_TYPE_V3),
    ({"claim": {}, "lower": {}}, PREDICATE_TYPE_V2),
    ({"claim": {}}, PREDICATE_TYPE),
])
def test_the_claims_fields_name_the_predicate_type_newest_first(predicate, kind):
    assert predicate_type(predicate) == kind
