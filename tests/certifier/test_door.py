"""The door (certifier.door): every name it gives is its home module's object, looked up on first use, so a face
that needs keys or envelopes never loads the numerics."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import certifier.door as door


def test_every_name_is_its_home_modules_object():
    for name in door.__all__:
        if name == "__version__":
            continue
        home, there = _home(name)
        module = importlib.import_module(home)
        expected = getattr(module, there) if hasattr(module, there) else importlib.import_module(f"{home}.{there}")
        assert getattr(door, name) is expected, name
    assert sorted(dir(door)) == sorted(door.__all__)


def _home(name: str) -> tuple[str, str]:
    for home, names in door.HOMES.items():
        for entry in names.split():
            alias, _, there = entry.partition("=")
            if alias == name:
                return home, there or alias
    raise AssertionError(name)


def test_a_name_is_given_once_and_an_unknown_one_is_refused():
    aliases = [e.partition("=")[0] for names in door.HOMES.values() for e in names.split()]
    assert len(aliases) == len(set(aliases))
    with pytest.raises(AttributeError, match="no_such_name"):
        door.no_such_name  # noqa: B018
    with pytest.raises(ImportError):
        exec("from certifier.door import no_such_name", {})


def test_keys_and_envelopes_come_without_the_numerics():
    """In a fresh interpreter: the key and envelope names load neither scipy nor the numerics; a numeric name does
    (so the check can fail)."""
    def loaded(names: str) -> str:
        code = (f"import sys; from certifier.door import {names}; "
                "print(sorted(m for m in ('scipy', 'certifier.numerics.schemes') if m in sys.modules))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()
    assert loaded("keygen, load_private, load_envelope, read_unverified, key_id, append, read_head") == "[]"
    assert loaded("exact_sigma") == "['certifier.numerics.schemes', 'scipy']"
