"""The layout of the package, read with ``ast`` (nothing is imported).

- No module imports a private name (``_x``) of another module of the package, neither with
  ``from .m import _x`` nor as ``m._x`` after ``from . import m``. Private *modules* (``_inputs``,
  ``kernels._config``) are fine: their leading underscore keeps them out of the public API, and
  the names inside them that other modules use are public.
- No import circle among the package's modules, counting the imports inside functions too (a lazy
  import hides a circle from ``import`` but not from the reader). The package root
  (``fairmedfm_fast/__init__.py``, the facade that re-exports the public names) counts too: it
  imports, lazily, every module its tables name (``_WHERE``, ``_SUBMODULES``), so a module that
  imports a name from the root instead of from the module that defines it closes a circle.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "fairmedfm_fast"
# Folder -> dotted package it is installed as (kernels/ is installed as fairmedfm_fast/kernels).
FOLDERS = {ROOT / "fairmedfm_fast": PACKAGE, ROOT / "kernels": f"{PACKAGE}.kernels"}


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package ``__init__``)."""
    found = {}
    for folder, dotted in FOLDERS.items():
        for path in sorted(folder.glob("*.py")):
            if path.name == "__init__.py":
                found[dotted] = (path, True)
            else:
                found[f"{dotted}.{path.stem}"] = (path, False)
    return found


MODULES = _modules()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _imports(name: str, modules: dict = MODULES, root: Path = ROOT) -> tuple[set[str], list[str]]:
    """The package modules that module ``name`` imports, and its imports of private names."""
    path, is_package = modules[name]
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if is_package else name.rpartition(".")[0]
    targets: set[str] = set()
    bad: list[str] = []
    aliases: dict[str, str] = {}  # local name -> package module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    targets.add(alias.name)
                    if alias.asname:
                        aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            if source not in modules:
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in modules:  # from . import _inputs: a module, private or not
                    targets.add(submodule)
                    aliases[alias.asname or alias.name] = submodule
                    continue
                targets.add(source)
                if _private(alias.name):
                    bad.append(f"{path.relative_to(root)}:{node.lineno}: from {source} import {alias.name}")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and _private(node.attr) and f"{aliases[node.value.id]}.{node.attr}" not in modules):
            bad.append(f"{path.relative_to(root)}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    if is_package and name == PACKAGE:  # the root's lazy imports: module names in _WHERE and _SUBMODULES
        targets |= {f"{name}.{node.value}" for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and f"{name}.{node.value}" in modules}
    targets.discard(name)
    return targets, bad


def test_the_modules_are_found():
    assert f"{PACKAGE}.cli" in MODULES and f"{PACKAGE}.kernels.sweeps" in MODULES
    assert f"{PACKAGE}.kernels" in MODULES and len(MODULES) > 30


def test_no_module_imports_a_private_name_of_another():
    bad = [line for name in MODULES for line in _imports(name)[1]]
    assert bad == [], "private names imported from other modules (make them public there):\n" + "\n".join(bad)


def test_no_import_circle():
    graph = {name: _imports(name)[0] for name in MODULES}
    assert {f"{PACKAGE}.evaluation", f"{PACKAGE}.dask"} <= graph[PACKAGE]  # the root's lazy imports are seen
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    circles: list[list[str]] = []

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph.get(name, ())):
            if state.get(target) == 1:
                circles.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert circles == [], "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_checks_catch_what_they_should(tmp_path):
    """The checks, run on a made-up pair of modules that break both rules."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "a.py").write_text("from .b import _hidden, __version__\n")
    (folder / "b.py").write_text("def f():\n    from . import a\n    return a._x, a.public\n")
    modules = {"pkg": (folder / "__init__.py", True), "pkg.a": (folder / "a.py", False),
               "pkg.b": (folder / "b.py", False)}
    targets_a, bad_a = _imports("pkg.a", modules, tmp_path)
    targets_b, bad_b = _imports("pkg.b", modules, tmp_path)
    assert targets_a == {"pkg.b"} and targets_b == {"pkg.a"}  # a circle
    assert bad_a == ["pkg/a.py:1: from pkg.b import _hidden"]
    assert bad_b == ["pkg/b.py:3: pkg.a._x"]
