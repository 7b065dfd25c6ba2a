"""Audits of a run a framework describes (docs/audit.md "From the frameworks").

Opacus: an accountant's `state_dict()` ({"history": [(noise_multiplier, sample_rate, steps), ...], "mechanism":
name}), saved by torch.save or as JSON. It describes a random-allocation run only when the batches came from
Algorithm 1's sampler: its mechanism is "random_allocation" (sigmacert.torch's accountant, which refuses Poisson
loaders), or the caller states sampler="random-allocation" for a history another accountant kept. Then every entry
has sample rate 1/M (M an integer) and steps a whole number of epochs (a multiple of M), and all entries share sigma:
the run is (M, steps / M summed, sigma), or, where the entries have several M, the run in stages (M_s, E_s) in the
history's order (consecutive entries of one M merged) at that sigma. A Poisson accountant's history without that
statement, or with sampler "poisson" or "shuffle" (a shuffled loader with a fixed batch size), is another
mechanism: refused, never called true or false.

jax_privacy: a BallsInBinsSampling (the object, or its configuration {"type": "BallsInBinsSampling", "cycle_length":
M, "iterations": T[, "noise_multiplier": sigma]}) is the fixed-bins run (M, E = ceil(T / M)).
"""
from __future__ import annotations

import io
import json
import math
from itertools import groupby
from operator import itemgetter

from certifier import door
from certifier.errors import ParameterError
from certifier.params import as_decimal_text
from sigmacert.files import read_regular
from trainer.jax_glue import strategy_run

RANDOM_ALLOCATION = "random_allocation"      # sigmacert.torch's accountant (trainer.opacus_accountant.MECHANISM)
SAMPLERS = ("random-allocation", "poisson", "shuffle")
MAX_STATE_BYTES = 16 << 20


class OtherMechanismError(ParameterError):
    """The history or configuration describes another sampling mechanism than the one audited."""


def load_state(path: str) -> dict:
    """An accountant state_dict from a JSON file or a torch.save file (read with weights_only: no code runs)."""
    data = read_regular(path, "accountant state", MAX_STATE_BYTES)
    try:
        state = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        state = _torch_state(data, path)
    if not isinstance(state, dict) or "history" not in state:
        raise ParameterError(f"{path}: not an Opacus accountant state_dict (no 'history')")
    return state


def _torch_state(data: bytes, path: str):
    try:
        import torch
    except ImportError:
        raise ParameterError(f"{path} is not JSON, and reading a torch.save file needs torch (pip install "
                             "'sigmacert[torch]')") from None
    try:
        return torch.load(io.BytesIO(data), weights_only=True)
    except Exception as err:  # any unreadable file is one line
        raise ParameterError(f"{path}: neither JSON nor a torch.save file of plain data ({type(err).__name__})") \
            from None


def opacus_run(state: dict, sampler: str | None = None) -> dict:
    """{steps, epochs, sigma} (or {stages, sigma}: entries of several M at one sigma) of the random-allocation
    run an Opacus history describes (module docstring); OtherMechanismError / ParameterError with the reason
    otherwise."""
    mechanism = str(state.get("mechanism", ""))
    if sampler is not None and sampler not in SAMPLERS:
        raise ParameterError(f"sampler must be one of {', '.join(SAMPLERS)}")
    if sampler in ("poisson", "shuffle"):
        raise OtherMechanismError(f"a {'Poisson' if sampler == 'poisson' else 'shuffled fixed-batch'} run is another "
                                  "mechanism than random allocation: sigmacert does not call its claim true or false")
    if mechanism != RANDOM_ALLOCATION and sampler is None:
        raise OtherMechanismError(f"the history was kept by Opacus's {mechanism or 'unnamed'!r} accountant, which "
                                  "models Poisson subsampling; the history does not say which sampler made the "
                                  "batches. If they came from Algorithm 1 (random allocation), say so with "
                                  "--sampler random-allocation; a Poisson or shuffled run is another mechanism")
    history = state["history"]
    if not isinstance(history, (list, tuple)) or not history:
        raise ParameterError("the accountant history is empty: no steps were taken")
    sigmas, blocks = set(), []                  # (M, E) of each entry, in the history's order
    for i, entry in enumerate(history, start=1):
        try:
            sigma, q, n = entry
            sigma, q, n = float(sigma), float(q), int(n)
        except (TypeError, ValueError):
            raise ParameterError(f"history entry {i} is not (noise_multiplier, sample_rate, steps)") from None
        m = round(1.0 / q) if q > 0 else 0
        if m < 1 or abs(m * q - 1.0) > 1e-9 or not math.isfinite(sigma) or sigma <= 0 or n < 1:
            raise ParameterError(f"history entry {i}: random allocation needs sample rate 1/M (M an integer), "
                                 f"sigma > 0 and steps >= 1; got {entry!r}")
        if n % m:
            raise ParameterError(f"history entry {i}: {n} steps at sample rate 1/{m} are not whole epochs "
                                 f"({n / m:.4g} epochs of M = {m}); refused")
        sigmas.add(as_decimal_text("sigma", sigma))
        blocks.append((m, n // m))
    if len(sigmas) > 1:
        raise ParameterError(f"the history has {len(sigmas)} different noise multipliers: a run in stages with a "
                             "sigma per stage, which audits do not take (a claim states one sigma)")
    sigma, = sigmas
    run = door.Run.in_sequence([(m, sum(e for _, e in same)) for m, same in groupby(blocks, key=itemgetter(0))])
    return {**run.pick(lambda m, e, scheme: {"steps": m, "epochs": e}, lambda stages: {"stages": str(run)}),
            "sigma": sigma}


def jax_run(strategy) -> dict:
    """{steps, iterations, sigma or None, scheme} of a jax_privacy BallsInBinsSampling (object or configuration)."""
    if isinstance(strategy, dict):
        kind = strategy.get("type", "BallsInBinsSampling")
        if kind != "BallsInBinsSampling":
            raise OtherMechanismError(f"{kind} is another sampling mechanism than balls-in-bins (fixed bins)")
        try:
            m, t = int(strategy["cycle_length"]), int(strategy["iterations"])
        except (KeyError, TypeError, ValueError):
            raise ParameterError("a BallsInBinsSampling configuration needs integer cycle_length and iterations") \
                from None
        sigma = strategy.get("noise_multiplier")
    else:
        r = strategy_run(strategy)
        m, t, sigma = r.steps, r.iterations, None
    if m < 1 or t < 1:
        raise ParameterError("cycle_length and iterations must be >= 1")
    return {"steps": m, "iterations": t, "sigma": None if sigma is None else as_decimal_text("sigma", sigma),
            "scheme": "fixed-bins"}


def audit_opacus(state, *, sampler: str | None = None, source: str | None = None, **claim):
    """Audit the claim (target= | epsilon=, delta= | fpr=, tpr=; width=, key=, ...) for the random-allocation run
    an Opacus accountant history describes (a state_dict, or a path to it)."""
    from sigmacert.audits.api import audit
    where = state if isinstance(state, str) else "state_dict"
    run = opacus_run(load_state(state) if isinstance(state, str) else state, sampler)
    return audit(run.get("steps"), run.get("epochs"), run["sigma"], stages=run.get("stages"),
                 source=source or f"Opacus accountant history {where}", **claim)


def audit_jax(strategy, sigma=None, *, source: str | None = None, **claim):
    """Audit the claim for a jax_privacy BallsInBinsSampling run (the object or its configuration) at sigma."""
    from sigmacert.audits.api import audit
    run = jax_run(strategy)
    s = sigma if sigma is not None else run["sigma"]
    if s is None:
        raise ParameterError("give the noise multiplier (sigma=, --sigma or the configuration's noise_multiplier)")
    return audit(run["steps"], None, s, scheme="fixed-bins", iterations=run["iterations"],
                 source=source or "jax_privacy BallsInBinsSampling", **claim)

