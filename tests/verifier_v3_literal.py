"""docs/method-v2.md done literally, for tiny lattices: values enumerated one by one, the pair
rules of §2 (ii) applied pair by pair (no x̂ recursion, no polynomials), masses as exact
rationals or arb balls, no fixed point and no trimming.  Independent of verifier/ except the
common input format (a distribution is a dict {(octave, index): mass}; octave 0 holds the
values j h, 0 <= j < 2N, octave k >= 1 the values 2^k h m, N <= m < 2N)."""
from __future__ import annotations

from flint import arb, arb_poly, fmpq

from verifier.format.strict import working_prec


def _add(d, k, w):
    d[k] = d.get(k, 0) + w


def reround(m: int, levels: int, two_point: bool) -> dict:
    """Index m on a lattice g carried `levels` times to the lattice 2g (§2: `half`; §4: floor)."""
    d = {m: fmpq(1)}
    for _ in range(levels):
        nd = {}
        for x, w in d.items():
            if x % 2 == 0 or not two_point:
                _add(nd, x // 2, w)
            else:
                _add(nd, (x - 1) // 2, w / 2)
                _add(nd, (x + 1) // 2, w / 2)
        d = nd
    return d


def oplus(X: dict, Y: dict, n: int, T: int, two_point: bool) -> dict:
    """X ⊕ Y pair by pair: the summand in the lower octave re-rounded onto the lattice of the
    higher one, the exact sum, its part in octave k + 1 carried once, octave T + 1 moved down
    to 2^T h (2N - 1)."""
    N, out = 1 << n, {}
    for (i, a), px in X.items():
        for (j, b), py in Y.items():
            k = max(i, j)
            for ma, wa in reround(a, k - i, two_point).items():
                for mb, wb in reround(b, k - j, two_point).items():
                    s, w = ma + mb, px * py * wa * wb
                    if s < 2 * N:
                        _add(out, (k, s), w)
                        continue
                    for mm, ww in reround(s, 1, two_point).items():
                        _add(out, (T, 2 * N - 1) if k + 1 > T else (k + 1, mm), w * ww)
    return out


def on_level(X: dict, c: int) -> dict:
    """Values of ML(h, n) written on ML(2^c h, n - c) (§10): index m -> m / 2^c, which must be exact."""
    assert all(m % 2**c == 0 for _, m in X), "a value off the level's lattice"
    return {(k, m // 2**c): w for (k, m), w in X.items()}


def oplus_at(X: dict, Y: dict, n: int, b: int, T: int, two_point: bool) -> dict:
    """§10: X ⊕ Y on the level lattice ML(2^(n-b) h, b), values read and written on ML(h, n)."""
    c = n - b
    Z = oplus(on_level(X, c), on_level(Y, c), b, T, two_point)
    return {(k, m * 2**c): w for (k, m), w in Z.items()}


def epoch(step: dict, M: int, n: int, T: int, two_point: bool = True, level_bits=None) -> dict:
    """§2 (ii) / §10: B_i = B_{i-1} ⊕ B_{i-1} and A ⊕ B_i on level i's lattice (all n without level_bits)."""
    nb = level_bits or [n] * M.bit_length()
    B, A = step, None
    for i in range(M.bit_length()):
        if i:
            B = oplus_at(B, B, n, nb[i], T, two_point)
        if M >> i & 1:
            A = B if A is None else oplus_at(A, B, n, nb[i], T, two_point)
    return A


def grid(n: int, ybits: list) -> list:
    """The grid G of §2 (i) as exact multiples of h, written out from the definition."""
    N, K = 2**n, len(ybits) - 1
    pts = [j for j in range(2 * N) if j % 2 ** (n - ybits[0]) == 0]
    for k in range(1, K + 1):
        pts += [2**k * m for m in range(N, 2 * N) if (m - N) % 2 ** (n - ybits[k]) == 0]
    return pts + [2 ** (K + 1) * N]


def where(u: int, n: int) -> tuple:
    """(octave, index) of the value u h on ML."""
    N, k = 2**n, 0
    while u >= 2 ** (k + 1) * N:
        k += 1
    return (k, u // 2**k)


def phi_pair(t2: fmpq):
    t = arb(t2).sqrt()
    Phi = lambda x: (-x / arb(2).sqrt()).erfc() / 2
    F0 = lambda y: arb(0) if y == 0 else Phi((arb(y).log() + arb(t2) / 2) / t)
    F1 = lambda y: arb(0) if y == 0 else Phi((arb(y).log() - arb(t2) / 2) / t)
    return F0, F1


def step_upper(t2: fmpq, h: fmpq, n: int, ybits: list) -> dict:
    """§2 (i): min(Y, cap) two-point rounded onto G with the cell formulas of certificate.md §4."""
    F0, F1 = phi_pair(t2)
    pts, out = grid(n, ybits), {}
    for a, b in zip(pts, pts[1:]):
        ya, yb = h * a, h * b
        m, mu = F0(yb) - F0(ya), F1(yb) - F1(ya)
        _add(out, where(a, n), (yb * m - mu) / (yb - ya))
        _add(out, where(b, n), (mu - ya * m) / (yb - ya))
    _add(out, where(pts[-1], n), 1 - F0(h * pts[-1]))
    return out


def step_lower(t2: fmpq, h: fmpq, n: int, ybits: list) -> tuple[dict, dict]:
    """§4 (a): Y to the largest grid point below it; P and Q masses."""
    F0, F1 = phi_pair(t2)
    pts, p, q = grid(n, ybits), {}, {}
    for a, b in zip(pts, pts[1:]):
        p[where(a, n)] = F0(h * b) - F0(h * a)
        q[where(a, n)] = F1(h * b) - F1(h * a)
    p[where(pts[-1], n)], q[where(pts[-1], n)] = 1 - F0(h * pts[-1]), 1 - F1(h * pts[-1])
    return p, q


def log_cell(v: fmpq, eta: fmpq) -> int:
    """floor(ln v / eta), decided exactly (precision doubled until the ball decides it)."""
    p = 64
    while True:
        with working_prec(p):
            x = (arb(v).log() / arb(eta)).floor()
        if x.is_exact():
            return int(x.unique_fmpz())
        p *= 2


def power(r: dict, E: int, k_top: int) -> dict:
    """(sum_j r_j z^j)^E, LSB-first binary powering, exponents above k_top moved to k_top after
    every product (and in r)."""
    clamp = lambda d: _clamped(d, k_top)
    X, out = clamp(r), None
    while E:
        if E & 1:
            out = X if out is None else clamp(_mul(out, X))
        E >>= 1
        if E:
            X = clamp(_mul(X, X))
    return out


def _clamped(d, k_top):
    out = {}
    for j, w in d.items():
        _add(out, min(j, k_top), w)
    return out


def _mul(a: dict, b: dict) -> dict:
    lo = min(a) + min(b)
    pa = arb_poly([a.get(j, 0) for j in range(min(a), max(a) + 1)])
    pb = arb_poly([b.get(j, 0) for j in range(min(b), max(b) + 1)])
    return {lo + i: c for i, c in enumerate((pa * pb).coeffs())}


def upper_O(M: int, E: int, t2: fmpq, m: dict) -> arb:
    """O of method v2 (§2 (i)-(iv)) done literally; m holds exact parameters."""
    n, T, h, eta = m["mantissa_bits"], m["top_octave"], m["h"], m["eta"]
    S = epoch(step_upper(t2, h, n, m["y_mantissa_bits"]), M, n, T, level_bits=m.get("level_bits"))
    r = {}
    for (k, i), w in S.items():
        if i == 0:
            continue  # L = 0: deleted
        L = fmpq(2**k * i) * h / M
        j = log_cell(L, eta)
        if j >= m["k_plus"]:
            _add(r, m["k_plus"], w)
        elif j >= m["k_minus"]:
            lo, hi = (arb(eta) * j).exp(), (arb(eta) * (j + 1)).exp()
            up = w * (arb(L) - lo) / (hi - lo)
            _add(r, j, w - up)
            _add(r, j + 1, up)
    b = power(r, E, m["k_top"])
    return sum((w * min(arb(1), (arb(eta) * j).exp()) for j, w in b.items()), arb(0))


def fsum(x: tuple, y: tuple, n: int, T: int, c: int = 0) -> tuple:
    """§4 (b): the lower method's sum of two values, a fixed map (floors, top clamp); with c > 0 on the
    level lattice ML(2^c h, n - c) of §10 (values read and written on ML(h, n))."""
    (i, a), (j, b) = x, y
    assert a % 2**c == 0 and b % 2**c == 0, "a value off the level's lattice"
    a, b, n = a >> c, b >> c, n - c
    N, k = 2**n, max(i, j)
    s = (a >> (k - i)) + (b >> (k - j))
    if s < 2 * N:
        return (k, s << c)
    return (T, (2 * N - 1) << c) if k + 1 > T else (k + 1, (s >> 1) << c)


def lower_tv_m3(E: int, t2: fmpq, m: dict) -> arb:
    """TV of the image of §4 at M = 3 by enumerating the triples of step values: the map is
    y1 ⊕ (y2 ⊕ y3) (bits of 3: A = B_0, then A ⊕ B_1), the shifted coordinate uniform among the
    three -- independently of the Q-side recursion of §4 (b)."""
    n, T, h, eta = m["mantissa_bits"], m["top_octave"], m["h"], m["eta"]
    c1 = n - m.get("level_bits", [n, n])[1]      # both sums are formed on level 1's lattice (§10)
    p, q = step_lower(t2, h, n, m["y_mantissa_bits"])
    U, W = {}, {}
    vals = list(p)
    for a in vals:
        for b in vals:
            for c in vals:
                k, i = fsum(a, fsum(b, c, n, T, c1), n, T, c1)
                j = m["k_minus"] if i == 0 else log_cell(fmpq(2**k * i) * h / 3, eta)
                j = min(max(j, m["k_minus"]), m["k_plus"])
                _add(U, j, p[a] * p[b] * p[c])
                _add(W, j, (q[a] * p[b] * p[c] + p[a] * q[b] * p[c] + p[a] * p[b] * q[c]) / 3)
    U, W = power(U, E, m["k_top"]), power(W, E, m["k_top"])
    diff = [W.get(j, arb(0)) - U.get(j, arb(0)) for j in set(U) | set(W)]
    return sum((d for d in diff if d > 0), arb(0))


def lower_tv_m4(E: int, t2: fmpq, m: dict) -> arb:
    """TV of the image of §4 at M = 4 by enumerating the quadruples of step values: the map is
    (y1 ⊕ y2) ⊕ (y3 ⊕ y4), the inner sums on level 1's lattice and the outer on level 2's (§10), the
    shifted coordinate uniform among the four -- independently of the Q-side recursion of §4 (b)."""
    n, T, h, eta = m["mantissa_bits"], m["top_octave"], m["h"], m["eta"]
    nb = m.get("level_bits", [n] * 3)
    c1, c2 = n - nb[1], n - nb[2]
    p, q = step_lower(t2, h, n, m["y_mantissa_bits"])
    vals = list(p)
    pairs_p, pairs_q = {}, {}                        # the image of (y1, y2) under P x P and (Q x P + P x Q)/2
    for a in vals:
        for b in vals:
            s = fsum(a, b, n, T, c1)
            _add(pairs_p, s, p[a] * p[b])
            _add(pairs_q, s, (q[a] * p[b] + p[a] * q[b]) / 2)
    cell = {}
    U, W = {}, {}
    for x, px in pairs_p.items():
        for y, py in pairs_p.items():
            k, i = fsum(x, y, n, T, c2)
            if (k, i) not in cell:
                j = m["k_minus"] if i == 0 else log_cell(fmpq(2**k * i) * h / 4, eta)
                cell[k, i] = min(max(j, m["k_minus"]), m["k_plus"])
            j = cell[k, i]
            _add(U, j, px * py)
            _add(W, j, (pairs_q[x] * py + px * pairs_q[y]) / 2)
    U, W = power(U, E, m["k_top"]), power(W, E, m["k_top"])
    diff = [W.get(j, arb(0)) - U.get(j, arb(0)) for j in set(U) | set(W)]
    return sum((d for d in diff if d > 0), arb(0))
