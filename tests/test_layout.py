"""The package layout's import rules, read from the source (AST, function-level imports included).

sigmacert (the face) may use every package; certifier (mathematics and certificates) uses none
of sigmacert, service or trainer; verifier uses no other project package; and the graph of
top-level packages has no cycle.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sigmacert", "certifier", "verifier", "trainer", "service", "proofs")
FORBIDDEN = {
    "certifier": {"sigmacert", "service", "trainer", "verifier", "proofs"},
    "verifier": set(PACKAGES) - {"verifier"},
    "trainer": {"sigmacert", "service", "proofs"},
    "service": {"sigmacert", "trainer", "proofs"},
    "proofs": {"sigmacert", "service", "trainer", "verifier"},
}


def imports_of(package: str) -> dict[str, set[str]]:
    """Project packages imported anywhere in `package` -> the files that import them."""
    out: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for n in names:
                top = n.split(".")[0]
                if top in PACKAGES and top != package:
                    out.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return out


def test_every_package_exists():
    for p in PACKAGES:
        assert (ROOT / p / "__init__.py").is_file(), p


def test_forbidden_imports():
    bad = []
    for pkg, forbidden in FORBIDDEN.items():
        for dep, files in imports_of(pkg).items():
            if dep in forbidden:
                bad.append(f"{pkg} imports {dep} in {sorted(files)}")
    assert not bad, "\n".join(bad)


def test_no_cycle():
    graph = {p: set(imports_of(p)) for p in PACKAGES}
    state: dict[str, int] = {}

    def visit(p, stack):
        if state.get(p) == 1:
            raise AssertionError("import cycle: " + " -> ".join(stack + [p]))
        if state.get(p) == 2:
            return
        state[p] = 1
        for q in sorted(graph[p]):
            visit(q, stack + [p])
        state[p] = 2

    for p in PACKAGES:
        visit(p, [])


def test_the_rule_reader_sees_function_level_imports(tmp_path, monkeypatch):
    """The checker must catch an import hidden inside a function (it can fail)."""
    pkg = tmp_path / "certifier"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "m.py").write_text("def f():\n    from trainer import algorithm\n    return algorithm\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert "trainer" in imports_of("certifier")
