"""Request models and bounds: every bad input becomes a 422 with a one-line reason.

The documented rules (docs/service.md): a body is JSON without duplicate keys; numbers are ASCII
digits; a decimal is read exactly as written (a JSON number such as 2.500000000000000000001 is
kept as that text, never rounded through a float); a subject name is printable text (no control,
format or bidirectional characters such as U+202E).
"""
from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from typing import Optional, Union

from flint import fmpq
from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, field_validator

from certifier import door
from certifier.door import parse_stage_list
from certifier.params import ParameterError, decimal_str, parse_count, parse_decimal
from service.job import request_run, request_target

Number = Union[StrictInt, StrictStr]
Decimal = Union[StrictStr, StrictInt, StrictFloat]


@dataclass(frozen=True)
class Limits:
    """What this service accepts (stricter than the CLI: a job must finish in reasonable time)."""
    max_steps: int = 10_000
    max_epochs: int = 1_000
    min_sigma: str = "0.1"
    max_sigma: str = "1000"
    min_target: str = "0.000001"
    max_target: str = "0.999999"
    max_digits: int = 12  # decimal places in sigma / target


class SubjectIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: StrictStr = Field(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$",
                            description="what the certificate is about, e.g. a model file name")
    sha256: StrictStr = Field(pattern=r"^[0-9a-f]{64}$", description="lowercase hex SHA-256 of that file")

    @field_validator("name")
    @classmethod
    def _printable(cls, v: str) -> str:
        bad = next((c for c in v if unicodedata.category(c)[0] in "CZ" and c != " "), None)
        if bad is not None:
            raise ValueError(f"must be printable text (U+{ord(bad):04X} is not)")
        return v


class StageIn(BaseModel):
    """One stage of a run in stages: E_s epochs of M_s steps (the claim's spelling, docs/compose.md §3)."""
    model_config = ConfigDict(extra="forbid")
    steps: Number = Field(description="steps per epoch M_s of this stage")
    epochs: Number = Field(description="epochs E_s of this stage")


class CertificateRequest(BaseModel):
    """POST /v1/certificates. Decimals are best sent as strings ("1.2"): they are read exactly."""
    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "examples": [{"steps": 100, "epochs": 10, "target": "0.1", "sigma": "1.426215"},
                     {"stages": "100x5,400x5", "target": "0.1"}]})
    steps: Optional[Number] = Field(None, description="steps per epoch M (fixed-bins: the number of bins); "
                                                      "required unless stages are given")
    stages: Optional[Union[StrictStr, list[StageIn]]] = Field(
        None, description="a run in stages at one shared sigma instead of steps and epochs: \"100x5,400x5\" (as "
                          "`sigmacert certify --stages`) or [{\"steps\": 100, \"epochs\": 5}, ...], in order "
                          "(format v5 certificates, random allocation)")
    epochs: Optional[Number] = Field(None, description="epochs E (fixed-bins: rounds per bin); "
                                                       "required unless fixed-bins iterations are given")
    scheme: Optional[StrictStr] = Field(None, description="sampling scheme: random-allocation (Algorithm 1, "
                                                          "the default) or fixed-bins (one bin per record)")
    iterations: Optional[Number] = Field(None, description="fixed-bins only: total iterations T; "
                                                           "E = ceil(T / M)")
    target: Optional[Decimal] = Field(None, description="TV target lambda in (0, 1); or one other target kind:")
    epsilon: Optional[Decimal] = Field(None, description="dp target: epsilon in [0.01, 20] (with delta)")
    delta: Optional[Decimal] = Field(None, description="dp target: delta in [1e-12, 0.1] (with epsilon): "
                                                       "(epsilon, delta)-DP in both directions")
    fpr: Optional[Decimal] = Field(None, description="tpr target: false-positive rate alpha in [1e-8, 0.5] (with tpr)")
    tpr: Optional[Decimal] = Field(None, description="tpr target: every test with FPR alpha has TPR <= tpr "
                                                     "(with fpr; tpr > fpr)")
    sigma: Optional[Decimal] = Field(None, description="noise multiplier; default: the exact sigma")
    subject: Optional[SubjectIn] = Field(None, description="file the certificate is about "
                                                          "(default: the claim itself)")


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ParameterError(f"body: duplicate key {str(k)[:40]!r}")
        out[k] = v
    return out


def _no_constant(name):
    raise ValueError(name)


def strict_json(data: bytes):
    """The JSON body: duplicate keys, NaN/Infinity and integers beyond Python's digit limit refused
    (ParameterError); every JSON number with a fraction or exponent kept as its exact text."""
    try:
        return json.loads(data, object_pairs_hook=_no_duplicates, parse_float=str, parse_constant=_no_constant)
    except ParameterError:
        raise
    except RecursionError:
        raise ParameterError("body: JSON nested too deeply") from None
    except (ValueError, UnicodeDecodeError):
        raise ParameterError("body: not valid JSON") from None


def _text(name: str, value) -> str:
    text = repr(value) if isinstance(value, float) else str(value)
    if len(text) > 40:
        raise ParameterError(f"{name} is too long (at most 40 characters)")
    if not text.isascii() or not text.isprintable():
        raise ParameterError(f"{name} must be written in ASCII digits")
    return text


def steps_of(value, limits: Limits) -> int:
    return parse_count("steps M", _text("steps M", value), limits.max_steps)


def epochs_of(value, limits: Limits) -> int:
    return parse_count("epochs E", _text("epochs E", value), limits.max_epochs)


def _decimal(name: str, value, limits: Limits) -> fmpq:
    """The exact decimal of a field, with at most max_digits decimal places."""
    q = parse_decimal(name, _text(name, value).strip())
    if q * fmpq(10) ** limits.max_digits != int((q * fmpq(10) ** limits.max_digits).floor()):
        raise ParameterError(f"{name} may have at most {limits.max_digits} decimal places")
    return q


def _bounded(name: str, value, lo: str, hi: str, limits: Limits) -> fmpq:
    q = _decimal(name, value, limits)
    if not parse_decimal("lo", lo) <= q <= parse_decimal("hi", hi):
        raise ParameterError(f"{name} must lie in [{lo}, {hi}] on this service, got {_text(name, value).strip()}")
    return q


def target_of(value, limits: Limits) -> str:
    return decimal_str(_bounded("target lambda", value, limits.min_target, limits.max_target, limits))


def sigma_of(value, limits: Limits) -> str:
    return decimal_str(_bounded("sigma", value, limits.min_sigma, limits.max_sigma, limits))


def scheme_of(value) -> str:
    if value is not None and len(str(value)) > 40:
        raise ParameterError("scheme is too long (at most 40 characters)")
    return door.parse_scheme(value)


def shape_of(steps, epochs, scheme, iterations, limits: Limits) -> dict:
    """{"steps", "epochs", "scheme", "iterations"} as the CLI reads them (sigmacert.cli.core.run_shape):
    fixed-bins may give iterations T instead of E (E = ceil(T / M)); both must agree when both are given."""
    m, sch = steps_of(steps, limits), scheme_of(scheme)
    e = None if epochs is None else epochs_of(epochs, limits)
    t = None if iterations is None else parse_count("iterations", _text("iterations", iterations),
                                                    limits.max_steps * limits.max_epochs)
    e = epochs_of(door.resolve_epochs(m, e, sch, t), limits)
    return {"steps": m, "epochs": e, "scheme": sch, "iterations": t}


MAX_STAGES_TEXT = 2000  # characters of a stage list written as text (64 stages of 100000x10000@... fit)


def stages_of(value, limits: Limits) -> tuple:
    """The Stage tuple of a run in stages, from "100x5,400x5" or a list of {steps, epochs}, parsed by the one
    parser of the CLI and the API (certifier.numerics.stages.parse_stage_list), then held to this service's
    bounds: every M_s <= max_steps, the total epochs <= max_epochs. The stages share one sigma (a job's
    `sigma`, or the exact shared sigma): a stage's own @sigma is refused."""
    if isinstance(value, str):
        if len(value) > MAX_STAGES_TEXT:
            raise ParameterError(f"stages is too long (at most {MAX_STAGES_TEXT} characters)")
        if not value.isascii() or not value.isprintable():
            raise ParameterError("stages must be written in ASCII, like 100x5,400x5")
        run = parse_stage_list(value, sigma_per_stage=False)
    else:
        run = parse_stage_list([(parse_count(f"stage {i} steps M", _text("steps M", x.steps), 10**7),
                             parse_count(f"stage {i} epochs E", _text("epochs E", x.epochs), 10**5))
                            for i, x in enumerate(value, 1)], sigma_per_stage=False)     # StageIn values
    for i, st in enumerate(run, 1):
        if st.steps > limits.max_steps:
            raise ParameterError(f"stage {i}: steps M must be at most {limits.max_steps} on this service, got "
                                 f"{st.steps}")
    total = sum(st.epochs for st in run)
    if total > limits.max_epochs:
        raise ParameterError(f"the stages' epochs add up to {total}, more than this service's {limits.max_epochs}")
    return run


def stages_json(run) -> list:
    """The canonical stage list of a request and of a v5 claim: [{"steps": M_s, "epochs": E_s}, ...]."""
    return [{"steps": st.steps, "epochs": st.epochs} for st in run]


def staged_shape(stages, scheme, limits: Limits) -> dict:
    """{"stages", "steps": None, "epochs": the total, "scheme", "iterations": None} of a run in stages; refuses any
    scheme but random allocation."""
    if scheme_of(scheme) != door.RANDOM_ALLOCATION:
        raise ParameterError("stages are for random allocation (Algorithm 1) only")
    run = stages_of(stages, limits)
    return {"stages": stages_json(run), "steps": None, "epochs": sum(st.epochs for st in run),
            "scheme": door.RANDOM_ALLOCATION, "iterations": None}


def run_of(stages, steps, epochs, scheme, iterations, limits: Limits) -> dict:
    """shape_of, or staged_shape when stages are given (their form read by door.given_form: stages beside steps,
    epochs or iterations refused); one of steps or stages is required."""
    def block():
        if steps is None:
            raise ParameterError("give steps (with epochs) or stages")
        return shape_of(steps, epochs, scheme, iterations, limits)
    return door.given_form(stages, (steps, epochs, iterations),
                           "stages replaces steps, epochs and iterations: give one or the other").pick(
        block, lambda spec: staged_shape(spec, scheme, limits))


KIND_FIELDS = door.KIND_FIELDS


def kind_of(given, limits: Limits) -> dict:
    """{"target": text} (tv) or {"target": delta | beta, "kind": {"name": "dp", "epsilon": text} |
    {"name": "tpr", "fpr": text}}: exactly one target kind (certifier.targets.parse, the rules of
    `sigmacert certify`, docs/targets.md), each decimal exact; lambda within the service's bounds, epsilon,
    delta, fpr and tpr within the stated domain (certifier.domain: the same refusal as every face).
    given: a request, or a dict of KIND_FIELDS."""
    given = given if isinstance(given, dict) else {k: getattr(given, k) for k in KIND_FIELDS}

    def rule(name: str, value) -> str:
        if name == "target":
            return target_of(value, limits)
        return decimal_str(parse_decimal(name, _text(name, value).strip()))
    target = door.parse(given, rule)              # the stated domain first, then this service's digits
    for name, text in target.params.items():
        _decimal(name, text, limits)
    target.rule()                      # the certifier's own refusals of the kind's parameter
    return target.request_json()


def normalise(req: CertificateRequest, limits: Limits) -> dict:
    """The canonical request (exact decimal strings): the idempotency key is its hash. A tv request has no
    `kind` key (its key is the one it always had); dp / tpr requests carry theirs."""
    shape = run_of(req.stages, req.steps, req.epochs, req.scheme, req.iterations, limits)
    k = kind_of(req, limits)
    door.check_domain(request_run(shape), request_target(k), certify=True)   # as certify, at once
    return {**shape, **k,
            "sigma": None if req.sigma is None else sigma_of(req.sigma, limits),
            "subject": None if req.subject is None else {"name": req.subject.name, "sha256": req.subject.sha256}}


MUST_BE = {  # what a request's field must be, by its name (a stage list's entries: stages.0.steps, ...)
    **dict.fromkeys(("steps", "epochs", "iterations"), "must be a positive integer"),
    **dict.fromkeys(("sigma", *door.KIND_FIELDS), "must be a decimal number (a string like \"0.1\" is read exactly)"),
    "stages": "must be a stage list: \"100x5,400x5\" or [{\"steps\": 100, \"epochs\": 5}, ...]",
    "scheme": f"must be one of {', '.join(door.SCHEMES)}"}


def describe_errors(errors) -> str:
    """One line from pydantic's error list: `field: problem; ...` (no input echo, no traceback)."""
    out, seen = [], set()
    for e in errors:
        loc = [str(p) for p in e.get("loc", ()) if p not in ("body", "query", "path")]
        # union members appear as an extra loc element (e.g. 'int', 'str'): keep the field only
        loc = [p for p in loc if p not in ("int", "str", "float", "constrained-str", "list[StageIn]")]
        field = ".".join(loc) or "body"
        if field in seen:
            continue
        seen.add(field)
        kind = e.get("type", "")
        if kind == "missing":
            msg = "field required"
        elif kind == "extra_forbidden":
            msg = "unknown field"
        elif kind == "json_invalid":
            field, msg = "body", "not valid JSON"
        elif field.split(".")[0] in MUST_BE:
            msg = MUST_BE[field.split(".")[0]]
        elif kind == "model_attributes_type" or kind == "dict_type":
            msg = "must be a JSON object"
        else:
            msg = str(e.get("msg", "invalid")).splitlines()[0][:200]
        out.append(f"{field}: {msg}")
    return "; ".join(out[:6]) or "invalid request"
