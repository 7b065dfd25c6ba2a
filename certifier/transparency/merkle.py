"""RFC 9162 §2.1 Merkle tree hash, inclusion and consistency proofs over a list of leaf hashes."""
from __future__ import annotations

import hashlib

EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(entry: bytes) -> bytes:
    """§2.1.1: SHA-256(0x00 || entry)."""
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """§2.1.1: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def split(n: int) -> int:
    """k: the largest power of two smaller than n (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


class Tree:
    """The tree of a list of leaf hashes; subtree roots are cached (a complete subtree never changes)."""

    def __init__(self, leaves: list[bytes] | None = None):
        self.leaves: list[bytes] = list(leaves or [])
        self.cache: dict[tuple[int, int], bytes] = {}

    def append(self, leaf: bytes) -> int:
        self.leaves.append(leaf)
        return len(self.leaves) - 1

    def __len__(self) -> int:
        return len(self.leaves)

    def mth(self, lo: int, hi: int) -> bytes:
        """MTH(D[lo:hi]) (§2.1.1)."""
        n = hi - lo
        if n == 0:
            return EMPTY_ROOT
        if n == 1:
            return self.leaves[lo]
        key = (lo, hi)
        if key in self.cache:
            return self.cache[key]
        k = split(n)
        h = node_hash(self.mth(lo, lo + k), self.mth(lo + k, hi))
        if n & (n - 1) == 0:      # complete subtrees only: they are the same in every later tree
            self.cache[key] = h
        return h

    def root(self, size: int | None = None) -> bytes:
        return self.mth(0, len(self.leaves) if size is None else size)

    def inclusion(self, index: int, size: int | None = None) -> list[bytes]:
        """PATH(index, D[0:size]) (§2.1.3.1), bottom up."""
        size = len(self.leaves) if size is None else size
        if not 0 <= index < size <= len(self.leaves):
            raise ValueError(f"no leaf {index} in a tree of size {size}")

        def path(m, lo, hi):
            n = hi - lo
            if n == 1:
                return []
            k = split(n)
            if m < k:
                return path(m, lo, lo + k) + [self.mth(lo + k, hi)]
            return path(m - k, lo + k, hi) + [self.mth(lo, lo + k)]
        return path(index, 0, size)

    def consistency(self, size1: int, size2: int | None = None) -> list[bytes]:
        """PROOF(size1, D[0:size2]) (§2.1.4.1)."""
        size2 = len(self.leaves) if size2 is None else size2
        if not 0 < size1 <= size2 <= len(self.leaves):
            raise ValueError(f"no consistency proof from size {size1} to size {size2} (tree size {len(self)})")

        def sub(m, lo, hi, b):
            n = hi - lo
            if m == n:
                return [] if b else [self.mth(lo, hi)]
            k = split(n)
            if m <= k:
                return sub(m, lo, lo + k, b) + [self.mth(lo + k, hi)]
            return sub(m - k, lo + k, hi, False) + [self.mth(lo, lo + k)]
        return sub(size1, 0, size2, True)
