"""The structure figures of the source tree, read from the AST (prints a table; `--json` for a dict).

What is counted (project packages sigmacert, certifier, verifier, trainer, service; tests excluded):
- kind_ifs: `if` / `elif` / conditional-expression / comprehension tests comparing with a kind name
  ("tv", "dp", "tpr"), outside the targets package (certifier/targets/).
- stage_ifs: such tests that read a name, attribute or key `stages` (or a Run's `staged`, `sigma_per_stage`).
- stages_functions: functions whose name ends in `_stages`.
- certify_lines: lines of certifier/certify.py.
- face_modules: distinct certifier modules imported by sigmacert/ and service/.
- inner_imports: import statements inside a function (and how many of them load an optional extra of
  pyproject.toml, or a project module that needs one at import time).
- upward_arrows: imports between the floors of certifier and of verifier (a subpackage or a top-level
  module is one floor node) that close a circle of floors (an edge inside a strongly connected component).
"""
from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sigmacert", "certifier", "verifier", "trainer", "service")
KIND_NAMES = {"tv", "dp", "tpr"}
STAGE_NAMES = {"stages", "staged", "sigma_per_stage"}
# the optional extras of pyproject.toml (a module of the project that needs one at import time is optional too)
OPTIONAL = {"torch", "opacus", "jax", "jaxlib", "jax_privacy", "dask", "distributed", "matplotlib", "fastapi",
            "uvicorn", "httptools", "uvloop", "httpx", "swagger_ui_bundle", "sklearn", "dp_accounting", "selenium",
            "PLD_accounting", "pydantic",  # pydantic: FastAPI's, installed by the service extra
            "model_signing", "huggingface_hub", "pymerkle", "OpenSSL"}


def files(packages=PACKAGES):
    for p in packages:
        yield from sorted((ROOT / p).rglob("*.py"))


def tests_of(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):
            yield node.test
        elif isinstance(node, ast.comprehension):
            yield from node.ifs


def names_kind(test) -> bool:
    """A comparison with a kind name; a key read (`row["tpr"]`, a field of that name) is no kind test."""
    for n in ast.walk(test):
        if isinstance(n, ast.Compare):
            for side in [n.left, *n.comparators]:
                keys = {id(x.slice) for x in ast.walk(side) if isinstance(x, ast.Subscript)}
                for c in ast.walk(side):
                    if isinstance(c, ast.Constant) and c.value in KIND_NAMES and id(c) not in keys:
                        return True
    return False


def reads_stages(test) -> bool:
    for n in ast.walk(test):
        if isinstance(n, ast.Name) and n.id in STAGE_NAMES or isinstance(n, ast.Attribute) and n.attr in STAGE_NAMES:
            return True
        if isinstance(n, ast.Constant) and n.value == "stages":
            return True
    return False


def _module_level(body):
    """The statements run at import time: the module's own, and those inside its top-level try / if blocks
    (`try: import torch` loads the extra when it is installed)."""
    for node in body:
        yield node
        if isinstance(node, (ast.Try, ast.If)):
            for part in (node.body, node.orelse, getattr(node, "finalbody", []),
                         *(h.body for h in getattr(node, "handlers", []))):
                yield from _module_level(part)


def top_imports(path: Path, tree) -> set[str]:
    """Modules imported at module level (not inside a function)."""
    mod = module_name(path)
    here = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    out = set()
    for node in _module_level(tree.body):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            out.add(".".join(base + ([node.module] if node.module else [])))
    return out


def optional_modules() -> set[str]:
    """Project modules that import an optional extra at import time (directly or through another module)."""
    top = {}
    for path in files():
        top[module_name(path)] = top_imports(path, ast.parse(path.read_text()))
    needs = {m for m, deps in top.items() if any(d.split(".")[0] in OPTIONAL for d in deps)}
    changed = True
    while changed:
        changed = False
        for m, deps in top.items():
            if m not in needs and any(d in needs or any(n.startswith(d + ".") for n in needs if d in top)
                                      for d in deps if d in top):
                needs.add(m)
                changed = True
    return needs


def _is_optional(name: str, optional: set[str]) -> bool:
    return name.split(".")[0] in OPTIONAL or name in optional


def inner_imports(tree, optional: frozenset = frozenset()):
    out = []

    def walk(node, inside):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and inside:
                if isinstance(child, ast.Import):
                    mods = [a.name for a in child.names]
                else:
                    mods = [child.module or ""] + [f"{child.module}.{a.name}" for a in child.names]
                out.append(any(_is_optional(m, optional) for m in mods))
            walk(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
    walk(tree, False)
    return out


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, tree) -> set[str]:
    mod = module_name(path)
    here = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                full = f"{target}.{a.name}"
                out.add(full if (ROOT / Path(*full.split("."))).with_suffix(".py").exists()
                        or (ROOT / Path(*full.split("."))).is_dir() else target)
    return out


def floor(mod: str, package: str) -> str | None:
    parts = mod.split(".")
    if parts[0] != package or len(parts) < 2:
        return None
    return parts[1]


def upward_arrows(package: str) -> list[str]:
    edges = {}
    for path in (ROOT / package).rglob("*.py"):
        tree = ast.parse(path.read_text())
        a = floor(module_name(path), package)
        if a is None:
            continue
        for m in imported_modules(path, tree):
            b = floor(m, package)
            if b is not None and b != a:
                edges.setdefault((a, b), set()).add(f"{module_name(path)} -> {m}")
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)

    def reach(x):
        seen, todo = set(), [x]
        while todo:
            y = todo.pop()
            for z in graph.get(y, ()):
                if z not in seen:
                    seen.add(z)
                    todo.append(z)
        return seen
    out = []
    for (a, b), why in sorted(edges.items()):
        if a in reach(b):
            out.extend(sorted(why))
    return out


def counts() -> dict:
    kind_ifs, stage_ifs, stage_fns, inner, inner_opt = [], [], [], 0, 0
    face = set()
    optional = frozenset(optional_modules())
    for path in files():
        rel = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text())
        for t in tests_of(tree):
            if names_kind(t) and not rel.startswith("certifier/targets/"):
                kind_ifs.append(f"{rel}:{t.lineno}")
            if reads_stages(t):
                stage_ifs.append(f"{rel}:{t.lineno}")
        stage_fns += [f"{rel}:{n.name}" for n in ast.walk(tree)
                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.endswith("_stages")]
        ins = inner_imports(tree, optional)
        inner += len(ins)
        inner_opt += sum(ins)
        if rel.startswith(("sigmacert/", "service/")):
            face.update(m for m in imported_modules(path, tree) if m.split(".")[0] == "certifier")
    arrows = upward_arrows("certifier") + upward_arrows("verifier")
    return {"kind_ifs": kind_ifs, "stage_ifs": stage_ifs, "stages_functions": stage_fns,
            "certify_lines": len((ROOT / "certifier/certify.py").read_text().splitlines()),
            "face_modules": sorted(face), "inner_imports": inner, "inner_imports_optional": inner_opt,
            "upward_arrows": arrows}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    c = counts()
    if "--json" in argv:
        print(json.dumps(c, indent=1))
        return 0
    for k, v in c.items():
        print(f"{k:24s} {len(v) if isinstance(v, list) else v}")
    if "-v" in argv:
        for k, v in c.items():
            if isinstance(v, list):
                print(f"\n{k}:")
                for x in v:
                    print("  " + x)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
