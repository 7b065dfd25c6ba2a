"""The verifier's hockey-stick lower bound (verifier/kinds.py) in one integer pass equals the rational formula
W(A) - c (U(A) + 1 - sum U), A = {W > c U}, and the kinds' dp lower value is the max of both directions."""
from __future__ import annotations

import random

from flint import fmpq

from verifier import kinds as vk


def _formula(X, Y, F, c):
    one = 1 << F
    num = sum((fmpq(y) - c * x for x, y in zip(X, Y) if y > c * x), fmpq(0))
    return (num - c * (one - sum(X))) / one


def test_integer_pass_equals_the_rational_formula():
    random.seed(11)
    for t in range(300):
        n = random.randint(1, 30)
        X = [random.randint(0, 1 << 12) for _ in range(n)]
        Y = [random.randint(0, 1 << 12) for _ in range(n)]
        c = vk.exp_upper(fmpq(random.randint(0, 30), 10)) if t % 2 else fmpq(random.randint(1, 9), random.randint(1, 9))
        assert vk._hockey(X, Y, 18, c) == _formula(X, Y, 18, c)


def test_by_hand_and_both_directions():
    # U = (1, 2), W = (3, 1) in units 2^-4, c = 2: A = {0}; deleted_p = 16 - 3
    assert vk._hockey([1, 2], [3, 1], 4, fmpq(2)) == fmpq(3 - 2 * (1 + 13), 16)
    U, W = [8, 4, 2], [2, 4, 8]
    eps = fmpq(1, 2)
    c = vk.exp_upper(eps)
    assert vk.dp_lower((U, W, 4), eps) == max(vk._hockey(U, W, 4, c), vk._hockey(W, U, 4, c))
    assert vk.dp_lower((U, W, 4), eps) > 0
