"""How far two correct replays may differ, and the comparison of recorded balls with replayed values."""
from __future__ import annotations

from flint import arb, fmpq

from .arith import dyadic


def upper_end(x: arb) -> fmpq:
    """An exact rational >= every point of x."""
    return fmpq(dyadic(x, True, 400), 2**400)


def slack(M: int, E: int, m: dict, width: fmpq, products: int) -> fmpq:
    """How far two correct replays may differ: only by their optional deletions (trimming <= trim
    and fixed-point floors <= width 2^-F per product), amplified at most M E times."""
    return 2 * M * E * products * (m["trim"] + width / fmpq(2) ** m["fixed_point_bits"])


def row_slack(tol: fmpq, eps: fmpq) -> fmpq:
    """How far two correct replays' hockey-stick bounds at eps may differ (docs/two-sided.md §2): tol bounds
    the difference of their masses weighted by min{1, e^{k eta}} (O's weights), and both bounds weigh the
    same masses by min{e^{k eta}, e^eps} (Q||P) or min{1, e^{eps + k eta}} (P||Q), each at most e^eps times
    O's weight for eps >= 0. So tol e^eps: a mass floored differently at Lambda = e^12 moves delta_{Q||P}(12.37)
    e^12 times as much as it moves O (seen at M=10, E=1, eps 20: 3.8e-23 against tol 5.1e-26)."""
    if eps <= 0:
        return tol
    return tol * upper_end(arb(eps).exp())


def compare(rec: dict, mine: dict, tol: fmpq, path="enclosures") -> list:
    """Names whose recorded ball and replayed value differ by more than radii + tol."""
    out = []
    for k, r in rec.items():
        m = mine[k]
        if isinstance(r, dict):
            out += compare(r, m, tol, f"{path}.{k}")
            continue
        m = m if isinstance(m, arb) else arb(m)
        gap = (r - m).abs_lower()  # max(0, |mid_r - mid_m| - rad_r - rad_m)
        if gap > arb(tol):
            out.append(f"{path}.{k}: recorded {r.str(12, radius=True)}, replayed {m.str(12, radius=True)}")
    return out


def compare_lower_v1(rec: dict, lr, tol: fmpq) -> list:
    """Lower method v1 (two-sided.md §1) leaves the bucket map free: buckets come from float logs,
    and sums near a bucket edge may land on either side, so two correct replays reach different
    (both valid) W_A, U_A.  What a certificate may not do is record more than the replay proves:
    the recorded W_A - U_A - deleted_p must not exceed ours by more than the radii and tol, and
    deleted_p must agree.  (Seen: W_A - U_A recorded 0.100000000259, replayed 0.100000000396.)"""
    out = []
    r, m = rec["W_A"] - rec["U_A"] - rec["deleted_p"], arb(lr.W_A - lr.U_A - lr.deficit)
    if (r - m).lower() > arb(tol):
        out.append(f"lower.enclosures.W_A - U_A - deleted_p: recorded {r.str(12, radius=True)}, above the "
                   f"replayed {m.str(12, radius=True)}")
    return out + compare({"deleted_p": rec["deleted_p"]}, {"deleted_p": lr.deficit}, tol, "lower.enclosures")
