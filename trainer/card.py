"""A Hugging Face model card (README.md: YAML metadata, then text) for a sealed release (docs/release.md).

Written with huggingface_hub's ModelCard and ModelCardData; the metadata's `privacy` block carries the
claim in words, sigma, M, E, the target kind and value, and the certificate's SHA-256 and key id. The card
is a description, signed with the rest of the directory by model.sig; sigmacert-verify --release checks
that its numbers are the certificate's.
"""
from __future__ import annotations

from certifier import door
from certifier.errors import ParameterError


def target_of(claim: dict) -> tuple[str, dict]:
    """(kind, value): tv -> {"lambda"}, dp -> {"epsilon", "delta"}, tpr -> {"fpr", "tpr"}."""
    kind = claim.get("kind") if isinstance(claim.get("kind"), dict) else {"name": "tv"}
    name = kind.get("name", "tv")
    cls = door.KINDS.get(name, door.TV)                 # the kind's parameter, then its target's index name
    fields = {} if cls.PARAM is None else {cls.PARAM: kind.get(cls.PARAM)}
    return name, {**fields, cls.INDEX_NAME: claim.get("target")}


def privacy_metadata(predicate: dict, claim: dict) -> dict:
    """The card's `privacy` block."""
    kind, value = target_of(claim)
    cert = predicate["certificate"]
    return {"claim": claim.get("statement"), "mechanism": claim.get("mechanism"), "adjacency": claim.get("adjacency"),
            "sigma": claim.get("sigma"), "steps_per_epoch_M": claim.get("steps"), "epochs_E": claim.get("epochs"),
            "stages": claim.get("stages"), "target_kind": kind, "target": value,
            "certificate_sha256": cert["sha256"], "certificate_keyid": cert["keyid"],
            "verify": "sigmacert-verify --release . --key RELEASE_PUBLIC.pem --key ISSUER_PUBLIC.pem"}


def model_card(predicate: dict, claim: dict) -> str:
    """The card's text (README.md)."""
    try:
        from huggingface_hub import ModelCard, ModelCardData
    except ImportError as err:
        raise ParameterError(f"a model card needs huggingface_hub: pip install 'sigmacert[release]' ({err})") \
            from None
    privacy = {k: v for k, v in privacy_metadata(predicate, claim).items() if v is not None}
    run = predicate.get("run") or {}
    data = ModelCardData(library_name="sigmacert", tags=["differential-privacy", "dp-sgd", "random-allocation",
                                                         "sigmacert"], privacy=privacy)
    model = predicate.get("model") or {}
    dataset = predicate.get("dataset") or {}
    kind, value = target_of(claim)
    body = f"""
# {model.get('architecture', 'model')} trained with DP-SGD at a certified noise multiplier

**Privacy claim** ({kind}, {', '.join(f'{k} = {v}' for k, v in value.items())}): {claim.get('statement')}.

| | |
| --- | --- |
| noise multiplier sigma | {claim.get('sigma')} |
| steps per epoch M, epochs E | {claim.get('steps')}, {claim.get('epochs')} |
| sampler | {run.get('sampler')} |
| N0, B0 (divisor) | {run.get('n0')}, {run.get('b0')} |
| steps done (empty steps) | {run.get('steps_done')} ({run.get('empty_steps')}) |
| data set | {dataset.get('name')} ({dataset.get('size')} records, sha256 {dataset.get('sha256')}) |
| certificate | certificate.json, sha256 {predicate['certificate']['sha256']}, issuer key id \
{predicate['certificate']['keyid']} |

The training manifest is `release.dsse.json` (an in-toto Statement whose subjects are the model files, signed
with the release key); `model.sig` is an OpenSSF model-signing signature over every file of this directory.
Check all of it offline:

    model_signing verify key --public_key RELEASE_PUBLIC.pem --signature model.sig .
    sigmacert-verify --release . --key RELEASE_PUBLIC.pem --key ISSUER_PUBLIC.pem
"""
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n{body}"))
