"""The sigma resolution: the grid the exact sigma is rounded up to and sigma_low steps down on.

An absolute 1e-6 below sigma = 10 (as every certificate issued before), six significant digits from
sigma = 10 on (docs/two-sided.md §5):

    res(sigma) = 1e-6 for sigma < 10,   res(sigma) = 10^(d - 6) for 10^(d-1) <= sigma < 10^d (d >= 2).

Why relative: TV is smooth in ln sigma, so one grid step moves TV by about (dTV/d ln sigma) res/sigma,
and the margin target - TV(sigma) that the certificate's rounding may spend is a uniform fraction of
that step. An absolute 1e-6 at sigma = 126 is a relative 8e-9 and leaves margins of 1e-12 that no
grid resolves; a relative 1e-6..1e-5 keeps a full step at lambda 1e-6..1e-5 (>= 1e-10 at lambda >= 1e-4),
the same at every sigma. (Seven digits, a relative 1e-7, left 1e-11 at lambda = 1e-4, which no grid
within the time budget resolves on the lower side.) Below 10 the absolute 1e-6 is a relative
1e-7..1e-5, so the nine Table 4 cells and every certificate issued before are on the grid.
"""
from __future__ import annotations

import math

from flint import fmpq

from certifier.params import decimal_str, parse_decimal, parse_positive_decimal

DIGITS = 6                      # significant digits from sigma = 10 on
FLOOR = fmpq(1, 10**6)          # the resolution below sigma = 10


def sigma_resolution(sigma: fmpq) -> fmpq:
    """res(sigma): 1e-6 below 10, else 10^(d - 6) with d the number of integer digits of sigma."""
    if sigma < 10:
        return FLOOR
    d = 2
    while sigma >= fmpq(10) ** d:
        d += 1
    return fmpq(10) ** (d - DIGITS) if d >= DIGITS else fmpq(1, 10 ** (DIGITS - d))


def round_up(sigma: fmpq) -> fmpq:
    """The least point of the resolution grid >= sigma (the grid of res(sigma); a point 10^d is on both)."""
    res = sigma_resolution(sigma)
    k = (sigma / res).ceil()
    return res * fmpq(int(k))


def step_up(sigma: fmpq) -> fmpq:
    """The next grid point above a grid point sigma."""
    return round_up(sigma + sigma_resolution(sigma))


def resolution_str(sigma: fmpq) -> str:
    return decimal_str(sigma_resolution(sigma))


def resolution_label(sigma: fmpq) -> str:
    """res(sigma) as 1e<k> (a power of ten), e.g. 1e-6 or 1e-4."""
    res, k = sigma_resolution(sigma), 0
    while fmpq(10) ** k > res:
        k -= 1
    while fmpq(10) ** (k + 1) <= res:
        k += 1
    return f"1e{k}"


AUTO = "auto"   # a search's resolution: res(sigma) where the answer lies, not the finest grid


def search_step(resolution, lo: float) -> fmpq:
    """The grid a search walks once its bracket's lower end `lo` is known: `resolution` (an exact decimal),
    or for AUTO res(lo) -- the finer grid where the bracket straddles a power of ten, whose answer `issued`
    rounds up to res(answer): the same point as the 1e-6 grid rounded up (res(sigma) divides it), in fewer
    evaluations at sigma >= 10 (10^4 times coarser at sigma ~ 1500)."""
    if resolution == AUTO:
        return sigma_resolution(fmpq(max(0, math.floor(lo))))
    return parse_positive_decimal("resolution", resolution)


def issued(sigma_text: str) -> str:
    """A sigma found on the 1e-6 search grid, rounded up to res(sigma): what certify issues and
    `sigmacert sigma`, the API and the service report as the exact sigma."""
    return decimal_str(round_up(parse_decimal("sigma", sigma_text)))
