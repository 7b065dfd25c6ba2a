"""Opacus's accountant slot for Algorithm 1: `random_allocation` (extra `torch`; docs/targets.md §6).

Registered in Opacus's registry when `sigmacert.torch` is imported, so that

    get_noise_multiplier(target_epsilon=1, target_delta=1e-5, sample_rate=1/M, epochs=E,
                         accountant="random_allocation", epsilon_tolerance=1e-4)
    PrivacyEngine(accountant="random_allocation").make_private_with_epsilon(..., poisson_sampling=False)

calibrate to the exact (eps, delta) of the pair (P_M^E, Q_M^E) (certifier.numerics.targets): the
history (sigma, sample rate 1/M, steps) is a run of Algorithm 1 with M = 1/q steps per epoch and
E = ceil(steps / M) epochs; a partial epoch counts as a whole one (the pair of E + 1 epochs is the
pair of E epochs with one more independent factor, so dropping it is post-processing and eps can only
grow; the k < M steps released of a partial epoch are a projection of a whole epoch's output, so
data processing covers them too). `get_epsilon(delta)` returns eps(delta) of the pair at the grid
point 1e-6 at or below sigma plus its error estimate (eps decreases in sigma), so Opacus's bisection
never lands below the exact sigma. Numerical, not certified: `sigmacert certify` proves a TV target.

A heterogeneous history (sample rates = batch counts M, noise multipliers, steps changing between
make_private calls or loaders) is a run in stages: each entry (sigma, 1/M, steps) is a stage of
E = ceil(steps / M) epochs of M steps at sigma, and the pair of the run is the product of the stages'
pairs (certifier.numerics.stages_profile; Theorem 4.1 with a product). Partial epochs count as whole
ones as above. An entry that may resume an epoch left partial by the last stage of its sample rate
(the same loader continuing, e.g. a noise schedule within one loader) is joined to that stage at the
smaller sigma with the epochs of both added: that run dominates both readings of the history (one
loader resumed: its ceil((a + b)/M) epochs <= ceil(a/M) + ceil(b/M), and adding noise to a step is
post-processing, C.4; two loaders: each stage at the smaller sigma is again post-processed).

`RandomAllocationEpochSampler` is Algorithm 1's sampler one epoch per pass (E passes, M batches
each), the shape Opacus's `make_private_with_epsilon` expects (sample rate 1 / len(loader) = 1/M).
"""
from __future__ import annotations

import inspect
import math

from opacus.accountants import IAccountant
from opacus.accountants.registry import _ACCOUNTANTS, register_accountant
from opacus.accountants.utils import get_noise_multiplier as opacus_get_noise_multiplier
from opacus.data_loader import dtype_safe, shape_safe, wrap_collate_with_empty
from torch.utils.data import DataLoader
from torch.utils.data._utils.collate import default_collate

from certifier import door
from certifier.domain import DELTA, check_run, refuse, words
from certifier.errors import NumericsUnreliableError, ParameterError, SigmacertError
from certifier.numerics.stages import MAX_STAGES
from certifier.numerics.stages_profile import exact_privacy_product
from certifier.numerics.targets import exact_privacy
from certifier.params import as_decimal_text, parse_decimal
from trainer.algorithm import streams
from trainer.allocation import Allocation
from trainer.torch_sampler import RandomAllocationBatchSampler, RunExhaustedError

MECHANISM = "random_allocation"
GRID = 1e-6            # sigma is read at the grid point at or below it: the exact sigma's grid


class HeterogeneousHistoryError(SigmacertError, ValueError):
    """The history has more distinct stages than the stages numerics take (MAX_STAGES)."""


def _steps_per_epoch(sample_rate: float) -> int:
    m = round(1.0 / sample_rate) if sample_rate > 0 else 0
    if m < 1 or abs(m * sample_rate - 1.0) > 1e-9:
        raise ParameterError(f"random allocation needs a sample rate 1/M with an integer M of steps per "
                             f"epoch; got {sample_rate!r}")
    return m


def epsilon_of_run(sigma: float, sample_rate: float, steps: int, delta: float) -> float:
    """eps(delta) of the pair (M = 1/q, E = ceil(steps/M)) at the grid point at or below sigma, plus
    its error estimate; inf where the numerics give no value (sigma too small, eps > 512)."""
    m, epochs = _epochs(sample_rate, steps)
    s = math.floor(sigma / GRID + 1e-9) * GRID
    if s <= 0:
        return math.inf
    try:
        v = exact_privacy(m, epochs, s, deltas=[delta], check=False).epsilon[delta]
    except NumericsUnreliableError:
        return math.inf
    return v.value + v.error if math.isfinite(v.error) else math.inf


def _epochs(sample_rate: float, steps: int) -> tuple[int, int]:
    m = _steps_per_epoch(sample_rate)
    return m, max(1, -(-int(steps) // m))


def check_delta(delta) -> None:
    """delta of the stated domain (certifier.domain), as every face refuses it: one line naming the nearest."""
    text = as_decimal_text("delta", delta)
    if parse_decimal("delta", text) not in DELTA:
        refuse(text, DELTA, f"delta = {words(DELTA.clamp(parse_decimal('delta', text)))}")


def get_noise_multiplier(*, target_epsilon, target_delta, sample_rate: float, epochs: int | None = None,
                         steps: int | None = None, accountant: str = MECHANISM, epsilon_tolerance: float = 0.01,
                         **kwargs) -> float:
    """Opacus's get_noise_multiplier (same arguments). For accountant="random_allocation" it is the exact sigma of
    the run (M = 1/q steps per epoch, E = ceil(steps / M)) for (target_epsilon, target_delta)-DP in both
    directions, as sigmacert.exact_sigma answers it (certifier.door: the stated domain and the same refusals, in
    one line, as every face), as the nearest double not below it; any other accountant is Opacus's own."""
    if accountant != MECHANISM:
        return opacus_get_noise_multiplier(target_epsilon=target_epsilon, target_delta=target_delta,
                                           sample_rate=sample_rate, epochs=epochs, steps=steps, accountant=accountant,
                                           epsilon_tolerance=epsilon_tolerance, **kwargs)
    if (steps is None) == (epochs is None):
        raise ParameterError("get_noise_multiplier takes as input EITHER a number of steps or a number of epochs")
    m, e = _epochs(sample_rate, steps if steps is not None else int(epochs / sample_rate))
    target = door.make("dp", as_decimal_text("target_delta", target_delta),
                       as_decimal_text("target_epsilon", target_epsilon))
    exact = door.exact_sigma(door.Run.block(m, e), target)
    s = float(exact)
    return s if parse_decimal("sigma", repr(s)) >= parse_decimal("sigma", exact) else math.nextafter(s, math.inf)


def history_blocks(history) -> list[tuple[int, int, float]]:
    """[(M, E, sigma)] of a history [(sigma, sample_rate, steps)]: one stage per entry with E = ceil(steps/M),
    an entry joined to the last stage of its sample rate when that stage ended inside an epoch (at the
    smaller sigma, the epochs added; module docstring)."""
    stages: list[list] = []       # [M, E, sigma, steps so far]
    last: dict[int, list] = {}    # M -> its latest stage
    for sigma, q, n in history:
        m, n = _steps_per_epoch(float(q)), int(n)
        e = max(1, -(-n // m))
        st = last.get(m)
        if st is not None and st[3] % m:
            st[1], st[2], st[3] = st[1] + e, min(st[2], float(sigma)), st[3] + n
        else:
            last[m] = [m, e, float(sigma), n]
            stages.append(last[m])
    check_run(_run_of([(m, e, s) for m, e, s, _ in stages]))    # the stated domain's blocks (certifier.domain)
    return [(m, e, s) for m, e, s, _ in stages]


def _too_many(count: int) -> HeterogeneousHistoryError:
    return HeterogeneousHistoryError(f"the random_allocation accountant composes at most {MAX_STAGES} stages; "
                                     f"this history has {count}")


def _run_of(stages) -> door.Run:
    """The run (M, E) of a history's stages [(M, E, sigma)], their sigmas left out: one stage is a block."""
    return door.Run.in_sequence([(m, e) for m, e, _ in stages], _too_many)


def epsilon_of_product(stages, delta: float) -> float:
    """eps(delta) of the run in stages [(M, E, sigma)] at each sigma's grid point at or below it, plus its
    error estimate (eps decreases in each stage's sigma); inf where the numerics give no value. One stage is a
    block: its eps is epsilon_of_run's."""
    return _run_of(stages).pick(lambda m, e, scheme: epsilon_of_run(stages[0][2], 1.0 / m, m * e, delta),
                                lambda _: _product_epsilon(stages, delta))


def _product_epsilon(stages, delta: float) -> float:
    """eps(delta) of the product of the stages' pairs at each sigma's grid point, plus its error estimate."""
    run = []
    for m, e, sigma in stages:
        k = math.floor(sigma / GRID + 1e-9)
        if k <= 0:
            return math.inf
        run.append((m, e, f"{k / 10**6:.6f}"))
    try:
        v = exact_privacy_product(run, deltas=[delta], check=False).epsilon[delta]
    except NumericsUnreliableError:
        return math.inf
    return v.value + v.error if math.isfinite(v.error) else math.inf


class RandomAllocationAccountant(IAccountant):
    """history = [(noise_multiplier, sample_rate, steps)], as Opacus's RDP accountant keeps it."""

    def __init__(self):
        self.history = []

    def step(self, *, noise_multiplier: float, sample_rate: float):
        if self.history and self.history[-1][:2] == (noise_multiplier, sample_rate):
            s, q, n = self.history.pop()
            self.history.append((s, q, n + 1))
        else:
            self.history.append((noise_multiplier, sample_rate, 1))

    def get_epsilon(self, delta: float, *args, **kwargs) -> float:
        check_delta(delta)
        if not self.history:
            return 0.0
        return epsilon_of_product(history_blocks(self.history), float(delta))

    def __len__(self) -> int:
        return sum(n for _, _, n in self.history)

    @classmethod
    def mechanism(cls) -> str:
        return MECHANISM

    def get_optimizer_hook_fn(self, sample_rate: float):
        _refuse_poisson(inspect.currentframe().f_back)
        return super().get_optimizer_hook_fn(sample_rate)


def _refuse_poisson(frame) -> None:
    """Called from PrivacyEngine.make_private (Opacus 1.6): refuse Poisson sampling and any loader
    whose batch sampler is not Algorithm 1's (the accounting would describe another run)."""
    local = frame.f_locals if frame is not None else {}
    if "poisson_sampling" not in local:
        return  # not called by make_private: nothing to check
    if local.get("poisson_sampling"):
        raise ParameterError("the random_allocation accountant describes Algorithm 1 (random allocation), not "
                             "Poisson sampling: pass poisson_sampling=False and a loader from "
                             "sigmacert.torch.random_allocation_loader")
    loader = local.get("data_loader")
    if not isinstance(getattr(loader, "batch_sampler", None), RandomAllocationEpochSampler):
        raise ParameterError("the random_allocation accountant needs the data loader of "
                             "sigmacert.torch.random_allocation_loader (Algorithm 1's batches, one epoch per pass)")


class RandomAllocationEpochSampler(RandomAllocationBatchSampler):
    """Algorithm 1's batches one epoch per pass: E passes of M lists of genuine indices (ghosts
    dropped, so a batch may be empty); a pass beyond E is refused (RunExhaustedError). The
    arguments are checked as RandomAllocationBatchSampler checks them."""

    def __init__(self, num_examples: int, steps: int, epochs: int, seed: int | None = 0, n0: int | None = None):
        super().__init__(num_examples, steps, epochs, seed, n0)
        self.epochs_done = 0
        self._epochs = Allocation(self.n0, self.steps, self.epochs, streams(self.seed)[0]).epochs_iter()

    def __len__(self) -> int:
        return self.steps

    def __iter__(self):
        members = next(self._epochs, None)
        if members is None:
            raise RunExhaustedError(f"all E = {self.epochs} epochs have been yielded; a further epoch is a run the "
                               "calibration does not cover")
        self.epochs_done += 1
        for records in members:
            genuine = records[records < self.num_examples]
            self.empty_steps += int(genuine.size == 0)
            yield [int(i) for i in genuine]


def random_allocation_loader(dataset, steps: int, epochs: int, seed: int | None = 0, n0: int | None = None,
                             collate_fn=None) -> DataLoader:
    """A DataLoader over Algorithm 1's batches, one epoch per pass; empty batches collate to
    zero-length tensors (Opacus still clips them to a zero sum and adds the noise)."""
    sampler = RandomAllocationEpochSampler(len(dataset), steps, epochs, seed, n0)
    first = dataset[0]
    first = first if isinstance(first, (tuple, list)) else (first,)
    collate = wrap_collate_with_empty(collate_fn=collate_fn or default_collate,
                                      sample_empty_shapes=[(0, *shape_safe(x)) for x in first],
                                      dtypes=[dtype_safe(x) for x in first])
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate)


def register() -> None:
    """Put the accountant in Opacus's registry under `random_allocation` (idempotent)."""
    if _ACCOUNTANTS.get(MECHANISM) is not RandomAllocationAccountant:
        register_accountant(MECHANISM, RandomAllocationAccountant, force=True)
