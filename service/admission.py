"""Admission: a certification job's predicted cost, before it is queued.

The prediction that decides (`admit`, `prediction`) is the calibrated model of service.costmodel: CPU seconds
and peak memory of certify (both sides) and of the signer's replay, from the plan certify runs first
(service.costplan), calibrated on recorded grids (tv in random allocation; dp / tpr kinds, fixed bins and runs
in stages apart). `predicted_seconds` and `predicted_seconds_product` (service.costplan) are the planners' own
seconds at a fixed loss budget: the former admission (1-88x too high for tv), now the "other" family's feature.
Above the service's per-job limits (seconds, or memory) the request is refused with the prediction (422), so no
worker is held by a job that cannot finish.
"""
from __future__ import annotations

from certifier.errors import ParameterError, SigmacertError
from service.costmodel import Prediction, predict_request
from service.costplan import kind_key, predicted_seconds, predicted_seconds_product

__all__ = ["MEMORY_TOLERANCE", "admit", "kind_key", "predicted_seconds", "predicted_seconds_product", "prediction"]


def prediction(req: dict) -> Prediction:
    """The job's Prediction (service.costmodel): certify and the signer's replay, seconds and memory."""
    return predict_request(req)


MEMORY_TOLERANCE = 2.0  # the memory fit's largest over-prediction on its grid (2.0x): refused only where it cannot fit


def admit(req: dict, max_seconds: float, max_memory: float | None = None) -> float:
    """The job's predicted seconds (certify, both sides, and the replay before it is signed); ParameterError
    (422) with the prediction when above `max_seconds`, or when its predicted peak memory is above
    MEMORY_TOLERANCE times `max_memory` (bytes: the job's memory limit; the job process enforces it anyway)."""
    try:
        p = prediction(req)
    except (SigmacertError, ValueError, ArithmeticError, OverflowError) as err:
        raise ParameterError(f"the cost of this job cannot be predicted: {str(err).splitlines()[0][:200]}") from None
    if p.seconds > max_seconds:
        raise ParameterError(f"this job is predicted to take {p.seconds:.0f} s by the calibrated cost model "
                             f"(certify {p.certify_seconds:.0f} s, both sides, and the replay before it is signed "
                             f"{p.replay_seconds:.0f} s), more than this service's per-job limit of "
                             f"{max_seconds:.0f} s; a smaller M or E, or a larger sigma or target, costs less")
    if max_memory is not None and p.memory > MEMORY_TOLERANCE * max_memory:
        raise ParameterError(f"this job is predicted to need {p.memory / 2**20:.0f} MiB at its peak by the calibrated "
                             f"cost model (certify {p.certify_memory / 2**20:.0f} MiB, the replay "
                             f"{p.replay_memory / 2**20:.0f} MiB), more than {MEMORY_TOLERANCE:g} times this "
                             f"service's per-job memory limit of {max_memory / 2**20:.0f} MiB")
    return p.seconds
