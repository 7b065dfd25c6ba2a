"""The package layout's import rules, read from the source (AST, function-level imports included).

sigmacert (the face) may use every package; certifier (mathematics and certificates) uses none
of sigmacert, service or trainer; verifier uses no other project package; the graph of
top-level packages has no cycle; inside each package no modules import each other in a circle
(relative imports resolved); and no module imports a private (_name) from another module.
Every test file is named after the module it tests, in the directory of tests/ that mirrors its package.
"""
from __future__ import annotations

import ast
import importlib.util
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


# ----------------------------------------------------------------------------- inside a package

def _module_of(path: Path, root: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_pkg else parts), is_pkg


def module_imports(package: str, root: Path | None = None) -> dict[str, set[tuple[str, str]]]:
    """Module -> {(imported module, imported name)} of `package`, relative imports resolved (AST,
    function-level imports included). `from a import b` records (a, b); `import a.b` records (a.b, '')."""
    root = root or ROOT
    out: dict[str, set[tuple[str, str]]] = {}
    for path in (root / package).rglob("*.py"):
        mod, is_pkg = _module_of(path, root)
        here = mod.split(".") if is_pkg else mod.split(".")[:-1]
        found = out.setdefault(mod, set())
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                found.update((a.name, "") for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                found.update((target, a.name) for a in node.names)
    return out


def module_graph(package: str, root: Path | None = None) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (`from pkg import mod` counts as pkg.mod)."""
    imports = module_imports(package, root)
    graph = {}
    for mod, found in imports.items():
        deps = set()
        for target, name in found:
            for cand in (f"{target}.{name}" if name else None, target):
                if cand in imports and cand != mod:
                    deps.add(cand)
                    break
        graph[mod] = deps
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(m, stack):
        if state.get(m) == 1:
            return stack[stack.index(m):] + [m]
        if state.get(m) == 2:
            return None
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            cyc = visit(n, stack + [m])
            if cyc:
                return cyc
        state[m] = 2
        return None

    for m in sorted(graph):
        cyc = visit(m, [])
        if cyc:
            return cyc
    return None


def private_imports(package: str, root: Path | None = None) -> list[str]:
    """`from project.module import _name` anywhere in `package` (a private name crossing a module)."""
    bad = []
    for mod, found in module_imports(package, root).items():
        for target, name in found:
            if target.split(".")[0] in PACKAGES and name.startswith("_") and not name.startswith("__"):
                bad.append(f"{mod} imports {name} from {target}")
    return bad


def test_no_import_cycle_inside_a_package():
    """Module level, relative imports included: no package's modules import each other in a circle."""
    cycles = [" -> ".join(c) for p in PACKAGES if (c := find_cycle(module_graph(p)))]
    assert not cycles, "\n".join(cycles)


def test_no_private_name_crosses_a_module():
    bad = [b for p in PACKAGES for b in private_imports(p)]
    assert not bad, "\n".join(bad)


def test_the_cycle_finder_sees_a_relative_import_circle(tmp_path):
    """Two modules importing each other through `from .x import y` (it can fail)."""
    pkg = tmp_path / "verifier"
    (pkg / "format").mkdir(parents=True)
    for f in ("__init__.py", "format/__init__.py"):
        (pkg / f).write_text("")
    (pkg / "format" / "a.py").write_text("from .b import g\n\ndef f():\n    return g\n")
    (pkg / "format" / "b.py").write_text("def g():\n    from .a import f\n    return f\n")
    (pkg / "core.py").write_text("from .format import a\n")
    cyc = find_cycle(module_graph("verifier", tmp_path))
    assert cyc is not None and set(cyc) == {"verifier.format.a", "verifier.format.b"}
    (pkg / "format" / "b.py").write_text("def g():\n    return 1\n")
    assert find_cycle(module_graph("verifier", tmp_path)) is None


def test_the_private_name_check_sees_a_relative_import(tmp_path):
    pkg = tmp_path / "certifier"
    (pkg / "bounds").mkdir(parents=True)
    for f in ("__init__.py", "bounds/__init__.py", "bounds/upper_v1.py"):
        (pkg / f).write_text("")
    (pkg / "bounds" / "upper_v2.py").write_text("from .upper_v1 import _b_enclosures\n")
    assert private_imports("certifier", tmp_path) == [
        "certifier.bounds.upper_v2 imports _b_enclosures from certifier.bounds.upper_v1"]


def _is_module(dotted: str, root: Path) -> bool:
    path = root / Path(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def private_attribute_access(package: str, root: Path | None = None) -> list[str]:
    """`module._name` read through an imported project module (`from certifier import certify as cf`;
    `cf._say`) anywhere in `package`: a private name crossing a module by attribute access."""
    root = root or ROOT
    bad = []
    for path in (root / package).rglob("*.py"):
        mod, is_pkg = _module_of(path, root)
        here = mod.split(".") if is_pkg else mod.split(".")[:-1]
        tree = ast.parse(path.read_text(), filename=str(path))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] in PACKAGES:
                        aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                for a in node.names:
                    full = f"{target}.{a.name}"
                    if target.split(".")[0] in PACKAGES and _is_module(full, root):
                        aliases[a.asname or a.name] = full
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
                continue
            dotted = _dotted(node.value)
            if dotted is None:
                continue
            head, _, rest = dotted.partition(".")
            if head not in aliases:
                continue
            owner = aliases[head] + (f".{rest}" if rest else "")
            if _is_module(owner, root) and owner != mod:
                bad.append(f"{mod} reads {node.attr} of {owner} (line {node.lineno})")
    return bad


def test_no_private_attribute_crosses_a_module():
    bad = [b for p in PACKAGES for b in private_attribute_access(p)]
    assert not bad, "\n".join(bad)


def test_the_private_attribute_check_sees_a_module_alias(tmp_path):
    """`from certifier import certify as cf; cf._say` is refused; the module's own and public names are not (it
    can fail)."""
    pkg = tmp_path / "certifier"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "certify.py").write_text("def _say():\n    return 1\n\ndef say():\n    return _say()\n")
    (pkg / "stages.py").write_text("from certifier import certify as cf\n\ndef f():\n    return cf.say() + cf._say()\n")
    assert private_attribute_access("certifier", tmp_path) == [
        "certifier.stages reads _say of certifier.certify (line 4)"]
    (pkg / "stages.py").write_text("from certifier import certify as cf\n\ndef f():\n    return cf.say()\n")
    assert private_attribute_access("certifier", tmp_path) == []


def test_the_private_attribute_check_sees_an_imported_module(tmp_path):
    """`import certifier.certify as m; m._say()` and `import certifier.certify; certifier.certify._say()` are refused
    as `from ... import certify as cf` is; a private name of the module's own (`_local`) is not (it can fail)."""
    pkg = tmp_path / "certifier"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "certify.py").write_text("def _say():\n    return 1\n")
    (pkg / "stages.py").write_text("import certifier.certify as m\n\ndef f():\n    return m._say()\n")
    assert private_attribute_access("certifier", tmp_path) == [
        "certifier.stages reads _say of certifier.certify (line 4)"]
    (pkg / "stages.py").write_text("import certifier.certify\n\ndef f():\n    return certifier.certify._say()\n")
    assert private_attribute_access("certifier", tmp_path) == [
        "certifier.stages reads _say of certifier.certify (line 4)"]
    (pkg / "stages.py").write_text("import certifier.certify as m\n\ndef _local():\n    return 1\n\n"
                                   "def f():\n    return m.__name__, _local()\n")
    assert private_attribute_access("certifier", tmp_path) == []


def _structure_counts():
    import importlib.util
    spec = importlib.util.spec_from_file_location("structure_counts", ROOT / "tools" / "structure_counts.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# an import inside a function that loads no optional extra, and why it is there
INNER_IMPORT_EXCEPTIONS = {
    "service/sandbox.py": "a job child imports its tasks after setrlimit: their modules count against its limit",
    "service/tasks.py": "the verifier's tasks (the signer's replay of every job, verify) start without the "
                        "certifier: its numerics are imported by the tasks that compute, when they run",
}


def inner_plain_imports(sc) -> list[str]:
    """Imports inside functions (project-wide) that load no optional extra: "path:line"."""
    optional = frozenset(sc.optional_modules())
    out = []
    for path in sc.files():
        tree = ast.parse(path.read_text())

        def walk(node, inside, rel=str(path.relative_to(sc.ROOT))):
            for ch in ast.iter_child_nodes(node):
                if isinstance(ch, (ast.Import, ast.ImportFrom)) and inside:
                    mods = [a.name for a in ch.names] if isinstance(ch, ast.Import) else \
                        [ch.module or ""] + [f"{ch.module}.{a.name}" for a in ch.names]
                    if not any(sc._is_optional(m, optional) for m in mods):
                        out.append(f"{rel}:{ch.lineno}")
                walk(ch, inside or isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
        walk(tree, False)
    return out


def test_imports_inside_functions_load_only_optional_extras():
    found = inner_plain_imports(_structure_counts())
    assert sorted({f.split(":")[0] for f in found}) == sorted(INNER_IMPORT_EXCEPTIONS), found


def test_the_inner_import_check_sees_a_plain_import(tmp_path, monkeypatch):
    sc = _structure_counts()
    pkg = tmp_path / "sigmacert"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "m.py").write_text("def f():\n    import json\n    import torch\n    return json, torch\n")
    monkeypatch.setattr(sc, "ROOT", tmp_path)
    monkeypatch.setattr(sc, "PACKAGES", ("sigmacert",))
    monkeypatch.setattr(sc, "files", lambda packages=("sigmacert",): sorted((tmp_path / "sigmacert").rglob("*.py")))
    assert inner_plain_imports(sc) == ["sigmacert/m.py:2"]     # json is plain; torch an optional extra


# ----------------------------------------------------------------------------- test file names

# tests/<dir> mirrors <dir> of the source tree; these directories mirror another place (a glob: only those files)
TEST_MIRRORS = {
    "audits": ("sigmacert/audits",),
    "bench": ("benchmarks/bench_*.py",),
    "transparency": ("certifier/transparency", "verifier/transparency.py"),
}
# test files of no one module, and why
CROSS_CUTTING = {
    "tests/test_layout.py": "the layout of the whole tree",
    "tests/bench/test_benchmarks.py": "every script under benchmarks/ runs as documented",
    "tests/sigmacert/cli/test_cli_hostile.py": "every command of sigmacert and sigmacert-verify with hostile arguments",
    "tests/service/test_service_hardening.py": "one finding of a review each, across the service's modules",
}


def mirrored(test_dir: Path, root: Path) -> list[Path]:
    """The source directories (or module files) a directory of tests/ mirrors; [] for tests/ itself and for a
    directory that mirrors nothing."""
    rel = test_dir.relative_to(root / "tests").parts
    if not rel:
        return []
    if len(rel) == 1 and rel[0] in TEST_MIRRORS:
        return [p for pattern in TEST_MIRRORS[rel[0]]
                for p in (sorted(root.glob(pattern)) if "*" in pattern else [root / pattern])]
    source = root.joinpath(*rel)
    return [source] if source.is_dir() else []


def named_after_a_module(name: str, sources: list[Path]) -> bool:
    """`name` (of test_<name>.py) or a prefix of it (split at `_`) is a module or subpackage of `sources`; or it is
    a mirrored package's own name, alone or followed by such a module (tests/verifier/test_verifier_kinds.py)."""
    modules, packages = set(), set()
    for s in sources:
        if s.is_file():
            modules.add(s.stem)
            continue
        packages.add(s.name)
        for p in s.iterdir():
            if p.suffix == ".py" and not p.name.startswith("__"):
                modules.add(p.stem)
            elif (p / "__init__.py").is_file():
                modules.add(p.name)
    parts = name.split("_")

    def starts_with_a_module(ps):
        return any("_".join(ps[:k]) in modules for k in range(1, len(ps) + 1))

    return starts_with_a_module(parts) or any(
        "_".join(parts[:k]) in packages and (k == len(parts) or starts_with_a_module(parts[k:]))
        for k in range(1, len(parts) + 1))


def misnamed_test_files(root: Path | None = None) -> list[str]:
    """Test files (paths from the root) named after no module of the directory their own mirrors."""
    root = root or ROOT
    return sorted(str(f.relative_to(root)) for f in (root / "tests").rglob("test_*.py")
                  if str(f.relative_to(root)) not in CROSS_CUTTING
                  and not named_after_a_module(f.stem[len("test_"):], mirrored(f.parent, root)))


def test_every_test_file_is_named_after_the_module_it_tests():
    """tests/<package>/.../test_<module>[_<aspect>].py for a module of <package>/...; an episode's name is refused."""
    bad = misnamed_test_files()
    assert not bad, "\n".join(bad)
    assert all((ROOT / f).is_file() for f in CROSS_CUTTING), [f for f in CROSS_CUTTING if not (ROOT / f).is_file()]


def test_test_file_names_are_unique():
    """pytest imports a test file of a directory without __init__.py by its bare name: two of one name collide."""
    seen: dict[str, list[str]] = {}
    for f in (ROOT / "tests").rglob("test_*.py"):
        seen.setdefault(f.name, []).append(str(f.relative_to(ROOT)))
    assert not [v for v in seen.values() if len(v) > 1]


def test_the_name_rule_refuses_an_episode(tmp_path):
    """A test named after an episode (test_cap_moved.py, test_verifier_row_slack.py) or in a directory that mirrors
    nothing is refused; one named after its module, alone, with an aspect or after its package, is not (it can
    fail)."""
    for f in ("certifier/__init__.py", "certifier/certify.py", "certifier/bounds/__init__.py",
              "certifier/bounds/upper_v1.py", "verifier/__init__.py", "verifier/kinds.py",
              "verifier/replay/__init__.py", "verifier/replay/slack.py", "benchmarks/bench_soak.py"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("")
    good = ["certifier/bounds/test_upper_v1.py", "certifier/bounds/test_upper_v1_cap.py",
            "certifier/test_certify_kinds.py", "certifier/test_bounds_result.py", "verifier/test_verifier.py",
            "verifier/test_verifier_kinds.py", "verifier/replay/test_slack.py", "bench/test_bench_soak.py"]
    episodes = ["bench/test_soak_bench.py", "certifier/bounds/test_cap_moved.py", "certifier/test_upper_v1.py",
                "oddities/test_certify.py", "test_certify.py", "verifier/test_verifier_row_slack.py"]
    for f in good + episodes:
        (tmp_path / "tests" / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tests" / f).write_text("")
    assert misnamed_test_files(tmp_path) == [f"tests/{f}" for f in sorted(episodes)]


def _layout_index():
    """tools/layout_index.py as a module (tools/ is no package)."""
    spec = importlib.util.spec_from_file_location("layout_index", ROOT / "tools" / "layout_index.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_module_index_matches_the_tree():
    """docs/layout.md lists every module with its docstring's first sentence (tools/layout_index.py --write)."""
    layout_index = _layout_index()
    assert (ROOT / "docs" / "layout.md").read_text() == layout_index.index(ROOT), \
        "docs/layout.md is stale: run python tools/layout_index.py --write"


def test_the_module_index_sees_a_new_module(tmp_path):
    layout_index = _layout_index()
    for pkg in layout_index.PACKAGES:
        (tmp_path / pkg).mkdir()
    (tmp_path / "certifier" / "fresh.py").write_text('"""A fresh module. More words."""\n')
    assert "- `certifier/fresh.py` — A fresh module\n" in layout_index.index(tmp_path)
