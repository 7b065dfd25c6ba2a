"""The replay table: (method name, version, side) -> its replay, its slack and its comparison.

An upper entry replays Lemma C.5 (or the closed form) from the claim and the method object alone
and says how far a correct certificate's enclosures may lie from ours; its `deltas` give the
privacy rows. A lower entry does the same at sigma_low. core.verify_bytes consults only this table;
a new method is one more entry (and its schema in format/v3.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from flint import fmpq

from .format.gaussian_shift import NAME as GAUSSIAN_SHIFT
from .format.stages import shape
from .format.strict import working_prec
from .replay import gaussian_shift as gs
from .replay import stages as st
from .replay.lower_v1 import deltas, replay_lower
from .replay.lower_v2 import replay_lower_v2, slack_lower
from .replay.slack import compare, compare_lower_v1, slack
from .replay.upper_v1 import pair, pair_sigma, replay
from .replay.upper_v2 import LOOSE, replay_v2
from .replay.upper_v2 import slack as slack_v2


@dataclass(frozen=True)
class Replay:
    replay: object                   # upper: (claim, method); lower: (claim, sigma_low, method) -> result
    check: object                    # (claim, method, recorded enclosures, result) -> (tol, mismatches)
    deltas: object = None            # upper: (result, method) -> eps -> (delta_qp, delta_pq) balls


def _check_upper_v1(c, m, enc, rp):
    M, E, _ = pair(c)  # fixed bins (format v4): one epoch
    width = m["truncation"] / m["h"] + m["cap"] / m["h"] + (m["k_plus"] - m["k_minus"]) * E
    tol = slack(M, E, m, width, 2 * (M.bit_length() + E.bit_length()))
    with working_prec(400):
        return tol, compare(enc, rp.enclosures, tol)


def _check_upper_v2(c, m, enc, rp):
    tol, loose = slack_v2(c, m, rp)
    strict = {k: {kk: x for kk, x in v.items() if (k, kk) not in LOOSE} if isinstance(v, dict) else v
              for k, v in enc.items()}
    with working_prec(400):
        return tol, compare(strict, rp.enclosures, tol) + compare({a: {b: enc[a][b]} for a, b in LOOSE},
                                                                  rp.enclosures, loose)


def _check_exact(path):
    """Closed forms: nothing deleted, no slack."""
    def check(c, m, enc, rp):
        with working_prec(400):
            return fmpq(0), compare(enc, rp.enclosures, fmpq(0), path)
    return check


def _check_lower_v1(c, m, enc, lr):
    M, E, _ = pair(c)
    width = 8 * M / m["h"] + m["cap"] / m["h"] + (m["b_max"] - m["b_min"]) * E
    tol = slack(M, E, m, width, 5 * M.bit_length() + 4 * E.bit_length())
    with working_prec(400):
        return tol, compare_lower_v1(enc, lr, tol)


def _check_lower_v2(c, m, enc, lr):
    tol = slack_lower(c, m)
    with working_prec(400):
        return tol, compare(enc, {"W_A": lr.W_A, "U_A": lr.U_A, "deleted_p": lr.deleted_p}, tol, "lower.enclosures")


def _replay_lower_v1(c, s, m):
    """Lower method v1 at sigma_low s on the claim's pair (fixed bins, format v4: one epoch at s/sqrt(E))."""
    M, E, t2 = pair({**c, "sigma": s})
    return replay_lower(M, E, pair_sigma(t2) if c.get("scheme") == "fixed-bins" else s, m)


def better_map(lr, reaches):
    """The lower replay, or the same replay under its other bucket map (lower v1's `other`: any fixed map
    gives a valid bound, two-sided.md §1 (c)) when only that one reaches what the certificate records
    (`reaches`: its bound and its enclosures are accepted)."""
    other = getattr(lr, "other", None)
    if reaches(lr) or other is None:
        return lr
    alt = other()
    return alt if reaches(alt) else lr


_rows_from_b = lambda rp, m: (lambda eps: deltas(rp.b, rp.F, m["eta"], eps))  # the b_k of step (iv)

UPPER = {
    ("lemma-c5-rounding", 1): Replay(replay, _check_upper_v1, _rows_from_b),
    ("lemma-c5-rounding", 2): Replay(replay_v2, _check_upper_v2, _rows_from_b),
    (GAUSSIAN_SHIFT, 1): Replay(lambda c, m: gs.replay(c, c["sigma"], m), _check_exact("enclosures"),
                         lambda rp, m: rp.deltas),
}
LOWER = {
    ("data-processing-lower", 1): Replay(_replay_lower_v1, _check_lower_v1),
    ("data-processing-lower", 2): Replay(replay_lower_v2, _check_lower_v2),
    (GAUSSIAN_SHIFT, 1): Replay(lambda c, s, m: gs.replay(c, s, m, upper=False), _check_exact("lower.enclosures")),
}


def _check_enclosures(slack_of, names):
    """A run in stages (format v5): the recorded enclosures `names` against ours, within the slack."""
    def check(c, m, enc, rp):
        tol = slack_of(c, m)
        ours = {k: getattr(rp, k) if hasattr(rp, k) else rp.enclosures[k] for k in names}
        with working_prec(400):
            return tol, compare({k: enc[k] for k in names}, ours, tol)
    return check


# format v5 (a run in stages): its methods are v2's, replayed stage by stage (replay/stages.py)
STAGES_UPPER = Replay(st.replay_product, _check_enclosures(st.slack_upper, ("O",)), _rows_from_b)
STAGES_LOWER = Replay(st.replay_lower_product, _check_enclosures(st.slack_lower, ("W_A", "U_A", "deleted_p")))


# the replay by the claim's shape (format/stages.py `shape`): a block's by its method (the format's schema admitted
# only these), a run in stages' by format v5's (its schema admits only lemma-c5-rounding v2, data-processing-lower v2)
UPPER_BY_SHAPE = {"block": lambda m: UPPER[(m["name"], m["version"])], "stages": lambda m: STAGES_UPPER}
LOWER_BY_SHAPE = {"block": lambda m: LOWER[(m["name"], m["version"])], "stages": lambda m: STAGES_LOWER}


def upper(m: dict, claim: dict | None = None) -> Replay:
    return UPPER_BY_SHAPE[shape(claim)](m)


def lower(m: dict, claim: dict | None = None) -> Replay:
    return LOWER_BY_SHAPE[shape(claim)](m)
