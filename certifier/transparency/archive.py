"""A local append-only archive of certificates: ARCHIVE/entries/NNNNNN.json (the exact bytes, leaf N of the
RFC 9162 tree) and ARCHIVE/heads/NNNNNN.json (the signed head of the tree of size N). The tree is always
recomputed from the entries, so a removed or replaced entry changes every later root and no consistency
proof from an earlier signed head verifies (docs/release.md "The log")."""
from __future__ import annotations

import json
import os

from certifier.certificate.envelope import key_id
from certifier.errors import ParameterError
from certifier.transparency.head import consistency_bundle, proof_bundle, read_head, sign_head
from certifier.transparency.merkle import Tree, leaf_hash

MAX_ENTRY = 4 << 20


def _dir(archive: str, sub: str) -> str:
    return os.path.join(archive, sub)


def entries(archive: str) -> list[bytes]:
    """The archived certificates in leaf order (a gap in the numbering is a removed entry: refused)."""
    d = _dir(archive, "entries")
    if not os.path.isdir(d):
        return []
    names = sorted(n for n in os.listdir(d) if n.endswith(".json"))
    if names != [f"{i:06d}.json" for i in range(len(names))]:
        raise ParameterError(f"{d}: entries are not numbered 000000.json onwards without a gap")
    out = []
    for n in names:
        with open(os.path.join(d, n), "rb") as f:
            out.append(f.read(MAX_ENTRY + 1))
    return out


def tree(archive: str) -> Tree:
    return Tree([leaf_hash(e) for e in entries(archive)])


def heads(archive: str) -> dict[int, dict]:
    """Size -> the signed head stored for it."""
    d = _dir(archive, "heads")
    out = {}
    for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        with open(os.path.join(d, n), "rb") as f:
            data = f.read(1 << 20)
        try:
            env = json.loads(data)
            out[read_head(env)["size"]] = env
        except (ValueError, KeyError, TypeError):
            raise ParameterError(f"{os.path.join(d, n)} is not a signed tree head") from None
    return out


def existing(archive: str) -> str:
    """`archive` if it is a log archive directory (ParameterError otherwise)."""
    if not os.path.isdir(_dir(archive, "entries")):
        raise ParameterError(f"{archive} is not a log archive (no entries/; `sigmacert log append` makes one)")
    return archive


def _write_new(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def append(archive: str, certificate: bytes, private_key) -> tuple[int, dict]:
    """Archive `certificate` as the next leaf, sign the new head; (index, head envelope)."""
    if len(certificate) > MAX_ENTRY:
        raise ParameterError("a certificate is at most 4 MiB")
    t = tree(archive)
    index = t.append(leaf_hash(certificate))
    _write_new(os.path.join(_dir(archive, "entries"), f"{index:06d}.json"), certificate)
    head = sign_head(len(t), t.root(), private_key.sign, key_id(private_key.public_key()))
    _write_new(os.path.join(_dir(archive, "heads"), f"{len(t):06d}.json"), json.dumps(head).encode())
    return index, head


def latest_head(archive: str) -> dict:
    hs = heads(archive)
    if not hs:
        raise ParameterError(f"{archive} has no signed head (sigmacert log append adds the first entry)")
    return hs[max(hs)]


def prove(archive: str, index: int | None = None, certificate: bytes | None = None) -> dict:
    """The inclusion bundle of leaf `index` (or of the entry equal to `certificate`) against the latest head."""
    es = entries(existing(archive))
    if index is None:
        if certificate not in es:
            raise ParameterError("that certificate is not in the archive")
        index = es.index(certificate)
    if not 0 <= index < len(es):
        raise ParameterError(f"no entry {index} (the archive has {len(es)})")
    t = Tree([leaf_hash(e) for e in es])
    return proof_bundle(es[index], index, t, latest_head(archive))


def consistency(archive: str, old_head: dict) -> dict:
    """The consistency proof from `old_head` to the latest head, computed from the entries as they are."""
    try:
        return consistency_bundle(tree(existing(archive)), old_head, latest_head(archive))
    except (KeyError, TypeError, ValueError) as err:
        raise ParameterError(f"no consistency proof from that head: {err}") from None


def audit(archive: str) -> list[str]:
    """What is wrong with the archive (empty: nothing): every stored head's root must be the root of the
    entries' tree at its size (their signatures are checked by verifier.transparency)."""
    t = tree(existing(archive))
    bad = []
    for size, env in sorted(heads(archive).items()):
        if size > len(t):
            bad.append(f"head of size {size}: the archive holds only {len(t)} entries (entries were removed)")
        elif t.root(size).hex() != read_head(env)["root"]:
            bad.append(f"head of size {size}: its root is not the entries' (an entry below {size} was replaced)")
    return bad
