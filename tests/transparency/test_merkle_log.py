"""The RFC 9162 log: the tree against Certificate Transparency's published vectors and pymerkle, the
offline verifier's proofs on every size, and the local archive's tamper evidence (docs/release.md)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from certifier.transparency.merkle import Tree, leaf_hash
from verifier import transparency as vt

# RFC 6962/9162 test vectors of the Certificate Transparency reference implementations: the leaves'
# entries, the roots of the trees of size 0..8, inclusion (1-based leaf, size, path) and consistency proofs.
ENTRIES = [bytes.fromhex(h) for h in ("", "00", "10", "2021", "3031", "40414243", "5051525354555657",
                                      "606162636465666768696a6b6c6d6e6f")]
ROOTS = ["e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
         "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
         "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
         "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
         "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
         "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
         "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
         "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
         "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"]
INCLUSION = [(1, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                     "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                     "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
             (6, 8, ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                     "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                     "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
             (3, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
             (2, 5, ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
                     "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                     "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"])]
CONSISTENCY = [(1, 1, []),
               (1, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                       "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                       "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
               (6, 8, ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
                       "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                       "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
               (2, 5, ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                       "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"])]


def test_ct_vectors():
    t = Tree([leaf_hash(e) for e in ENTRIES])
    assert [t.root(n).hex() for n in range(9)] == ROOTS
    for leaf, size, path in INCLUSION:
        assert [h.hex() for h in t.inclusion(leaf - 1, size)] == path
        assert vt.verify_inclusion(leaf - 1, size, t.leaves[leaf - 1], [bytes.fromhex(h) for h in path],
                                   bytes.fromhex(ROOTS[size]))
    for m, n, proof in CONSISTENCY:
        assert [h.hex() for h in t.consistency(m, n)] == proof
        assert vt.verify_consistency(m, n, [bytes.fromhex(h) for h in proof], bytes.fromhex(ROOTS[m]),
                                     bytes.fromhex(ROOTS[n]))


def test_every_proof_of_every_size_and_its_forgeries():
    t = Tree([leaf_hash(bytes([i, i * 7 % 256])) for i in range(37)])
    for n in range(1, 38):
        root = t.root(n)
        for i in range(n):
            path = t.inclusion(i, n)
            assert vt.verify_inclusion(i, n, t.leaves[i], path, root)
            assert not vt.verify_inclusion(i, n, leaf_hash(b"other"), path, root)
            assert not vt.verify_inclusion((i + 1) % n, n, t.leaves[i], path, root) or n == 1
        for m in range(1, n + 1):
            proof = t.consistency(m, n)
            assert vt.verify_consistency(m, n, proof, t.root(m), root)
            if m < n:
                assert not vt.verify_consistency(m, n, proof, t.root(m - 1) if m > 1 else leaf_hash(b"x"), root)
                bad = Tree(t.leaves[:n])
                bad.leaves[m - 1] = leaf_hash(b"replaced")          # a replaced entry below the old size
                assert not vt.verify_consistency(m, n, bad.consistency(m, n), t.root(m), bad.root(n))


def test_roots_and_inclusion_paths_agree_with_pymerkle():
    from pymerkle import InmemoryTree
    pm = InmemoryTree(algorithm="sha256")
    ours = Tree()
    for i in range(40):
        e = f"certificate {i}".encode()
        pm.append_entry(e)
        ours.append(leaf_hash(e))
        n = i + 1
        assert pm.get_root(n) == ours.root(n)
        for j in (0, i // 2, i):
            assert pm.prove_inclusion(j + 1, n).path[1:] == ours.inclusion(j, n)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "sigmacert", *args], capture_output=True, text=True, timeout=120)


def test_local_archive_and_a_replaced_entry(tmp_path):
    from certifier.certificate.keys import keygen
    keygen(str(tmp_path / "k"))
    key, pub = str(tmp_path / "k" / "private.pem"), str(tmp_path / "k" / "public.pem")
    arc = tmp_path / "arc"
    for i in range(6):
        (tmp_path / f"c{i}.json").write_text(json.dumps({"certificate": i}))
        r = _cli("log", "append", str(arc), str(tmp_path / f"c{i}.json"), "--key", key, "--json")
        assert r.returncode == 0, r.stderr
        if i == 3:
            shutil.copyfile(arc / "heads" / "000004.json", tmp_path / "kept.json")
    r = _cli("log", "proof", str(arc), str(tmp_path / "c2.json"), "-o", str(tmp_path / "p.json"))
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "verifier", "--log-proof", str(tmp_path / "p.json"), "--key", pub,
                        "--json"], capture_output=True, text=True)
    assert r.returncode == 0 and json.loads(r.stdout)["log"]["inclusion"]["index"] == 2
    p = json.loads((tmp_path / "p.json").read_text())
    for bad, reason in ((dict(p, inclusion=[h[::-1] for h in p["inclusion"]]), "log-inclusion"),
                        (dict(p, index=3), "log-inclusion"), (dict(p, size=99), "log-proof"),
                        (dict(p, head=json.loads((tmp_path / "kept.json").read_text())), "log-proof")):
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        r = subprocess.run([sys.executable, "-m", "verifier", str(tmp_path / "c2.json"), "--log-proof",
                            str(tmp_path / "bad.json"), "--key", pub, "--json"], capture_output=True, text=True)
        assert r.returncode == 1 and json.loads(r.stdout)["log"]["reason"] == reason, r.stdout + r.stderr
    assert _cli("log", "verify", str(arc), "--key", pub, "--head", str(tmp_path / "kept.json")).returncode == 0
    for how in ("replace", "remove"):
        bad = tmp_path / how
        shutil.copytree(arc, bad)
        if how == "replace":
            (bad / "entries" / "000001.json").write_text(json.dumps({"certificate": "forged"}))
        else:               # entries 3-5 removed with their heads (no gap left in the numbering)
            for i in (3, 4, 5):
                (bad / "entries" / f"00000{i}.json").unlink()
                (bad / "heads" / f"00000{i + 1}.json").unlink()
        for i in (7, 8):    # the log goes on: its next heads are signed over the archive as it now is
            (tmp_path / f"c{i}.json").write_text(json.dumps({"certificate": i}))
            assert _cli("log", "append", str(bad), str(tmp_path / f"c{i}.json"), "--key", key).returncode == 0
        r = _cli("log", "consistency", str(bad), "--head", str(tmp_path / "kept.json"), "--json")
        assert r.returncode == 0, r.stderr
        b = json.loads(r.stdout)
        with pytest.raises(vt.Reject, match="does not extend"):
            from verifier import load_public_key
            vt.verify_consistency_bundle(b["old_head"], b["new_head"], b["proof"],
                                         [load_public_key(open(pub, "rb").read())])
        r = _cli("log", "verify", str(bad), "--key", pub, "--head", str(tmp_path / "kept.json"))
        assert r.returncode == 1 and "does not extend the signed tree of size 4" in r.stdout
