"""The layout of the package, read with ``ast`` (nothing is imported).

- No module imports a private name (``_x``) of another module of the package, neither with
  ``from .m import _x`` nor as ``m._x`` after ``from . import m``. Private *modules* (``_inputs``,
  ``kernels._jit``) are fine: their leading underscore keeps them out of the public API, and
  the names inside them that other modules use are public.
- No import circle among the package's modules, counting the imports inside functions too (a lazy
  import hides a circle from ``import`` but not from the reader). The package root
  (``fairmedfm_fast/__init__.py``, the facade that re-exports the public names) counts too: it
  imports, lazily, every module its tables name (``_WHERE``, ``_SUBMODULES``), so a module that
  imports a name from the root instead of from the module that defines it closes a circle.
- ``kernels/`` is one flat folder: the caches' stamp (``kernels/_caches.py``) hashes the ``.py`` files of
  that folder and the plain-Python copies (``kernels/_plain.py``) import its modules by their file
  name, neither looking into subfolders.
- Floors as folders: each private subpackage of ``fairmedfm_fast/`` is a floor (:data:`FLOORS`, from the
  bottom up) and imports only from its own floor and those below. The public modules at the top of
  the package are thin modules over the floors; only the command line (``_cli/``, ``cli.py``) sits
  above them. In words: inputs and the engine never import the report; the kernels know nothing of
  pandas (nor of anything but numpy, numba, the standard library and each other); the backends call
  the engine, never a kernel.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "fairmedfm_fast"
# Folder -> dotted package it is installed as (kernels/ is installed as fairmedfm_fast/kernels).
FOLDERS = {ROOT / "fairmedfm_fast": PACKAGE, ROOT / "kernels": f"{PACKAGE}.kernels"}


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package ``__init__``), subfolders included."""
    found = {}
    for folder, dotted in FOLDERS.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if "__pycache__" in parts:
                continue
            if parts[-1] == "__init__":
                found[".".join((dotted, *parts[:-1]))] = (path, True)
            else:
                found[".".join((dotted, *parts))] = (path, False)
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


#: The floors, from the bottom up: a module may import from its own floor and those below it.
#: "public" is the package's top-level modules (the thin modules of the public import paths).
FLOORS = ("kernels", "_util", "_inputs", "_registry", "_engine", "_statistics", "_report", "_backends", "public",
          "_cli")
#: Top-level modules that are not on the public floor.
TOP_LEVEL = {"_version": "_util", "cli": "_cli", "__main__": "_cli", "_workloads": "_cli",
             "warmup": "_cli", "_build": "_cli"}


def floor_of(name: str) -> str:
    """The floor of a dotted module name of the package."""
    parts = name.split(".")
    if len(parts) == 1:
        return "public"  # the package root: the facade of the public names
    if parts[1] == "kernels" or len(parts) > 2:
        return parts[1] if parts[1] in FLOORS else "public"
    return TOP_LEVEL.get(parts[1], "public")


def floor_breaks(graph: dict[str, set[str]]) -> list[str]:
    """Arrows that run up a floor, as "module -> target (floor -> floor)"."""
    rank = {floor: i for i, floor in enumerate(FLOORS)}
    return [f"{name} -> {target} ({floor_of(name)} -> {floor_of(target)})"
            for name, targets in sorted(graph.items()) for target in sorted(targets)
            if rank[floor_of(target)] > rank[floor_of(name)]]


def _graph() -> dict[str, set[str]]:
    return {name: _imports(name)[0] for name in MODULES}


def test_every_module_has_a_floor():
    """A new subpackage is given its place in FLOORS before it is used (else its arrows go unchecked)."""
    for name in MODULES:
        parts = name.split(".")
        if len(parts) > 2:
            assert parts[1] in FLOORS, f"{name}: its folder {parts[1]} is not in FLOORS"
    assert {floor_of(name) for name in MODULES} == set(FLOORS)


def test_arrows_run_down_the_floors():
    bad = floor_breaks(_graph())
    assert bad == [], "imports that run up a floor (move the code down, or the import up):\n" + "\n".join(bad)


def test_inputs_and_the_engine_never_import_the_report():
    graph = _graph()
    bad = [f"{name} -> {target}" for name, targets in graph.items() if floor_of(name) in ("_inputs", "_engine")
           for target in targets if floor_of(target) in ("_report", "_backends", "public", "_cli")]
    assert bad == []


def test_the_backends_call_the_engine_never_a_kernel():
    graph = _graph()
    bad = [f"{name} -> {target}" for name, targets in graph.items() if floor_of(name) == "_backends"
           for target in targets if floor_of(target) == "kernels"]
    assert bad == []


def _external_imports(path: Path) -> set[str]:
    """The top-level names of what a file imports from outside the package (relative imports left out)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add((node.module or "").split(".")[0])
    return found


def test_the_kernels_folder_is_flat():
    """No kernels module in a subfolder: the stamp would not cover it, nor would it have a plain copy."""
    folder = ROOT / "kernels"
    nested = [str(path.relative_to(ROOT)) for path in folder.rglob("*.py")
              if path.parent != folder and "__pycache__" not in path.parts]
    assert nested == [], "kernels/ in subfolders (teach _caches.source_stamp and _plain.interpreted them):\n" + \
        "\n".join(nested)


def test_the_kernels_know_nothing_of_pandas():
    """Kernels import no pandas, pyarrow, polars or tensors, and nothing of the package above them."""
    data_libraries = {"pandas", "pyarrow", "polars", "torch", "dask", "distributed", "sklearn", "matplotlib"}
    for name, (path, _) in MODULES.items():
        if floor_of(name) != "kernels":
            continue
        assert _external_imports(path) & data_libraries == set(), f"{name} imports {_external_imports(path)}"
        outside = {target for target in _imports(name)[0] if floor_of(target) != "kernels"}
        assert outside == set(), f"{name} imports {sorted(outside)}"


def test_the_floor_check_catches_an_arrow_up():
    graph = {f"{PACKAGE}._engine.a": {f"{PACKAGE}._report.b", f"{PACKAGE}.kernels.c"},
             f"{PACKAGE}._backends.d": {f"{PACKAGE}._engine.a"}, f"{PACKAGE}.kernels.c": set()}
    assert floor_breaks(graph) == [f"{PACKAGE}._engine.a -> {PACKAGE}._report.b (_engine -> _report)"]
    assert floor_of(f"{PACKAGE}.cli") == "_cli" and floor_of(f"{PACKAGE}.dask") == "public"
    assert floor_of(PACKAGE) == "public" and floor_of(f"{PACKAGE}._cli.score") == "_cli"


def _builds_a_report(path: Path) -> bool:
    """Whether the module at ``path`` calls ``FairnessReport(...)``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "FairnessReport"
               for node in ast.walk(tree))


def test_one_module_builds_every_report(tmp_path):
    builders = sorted(name for name, (path, _) in MODULES.items() if _builds_a_report(path))
    assert builders == [f"{PACKAGE}._report.assembly"]
    # the check sees a call, not a mention
    (tmp_path / "m.py").write_text("x = 'FairnessReport(' \ny = FairnessReport('seg')\n")
    (tmp_path / "n.py").write_text("def f(report: 'FairnessReport'):\n    return report\n")
    assert _builds_a_report(tmp_path / "m.py") and not _builds_a_report(tmp_path / "n.py")


#: Issue 39's limits on the Python layers: no module above this many lines ...
MAX_MODULE_LINES = 700
#: ... and at most MAX_LONG_FUNCTIONS functions above LONG_FUNCTION lines of code (docstrings, comments
#: and blank lines not counted). The kernels are not held to them: a fused pass is one long loop.
LONG_FUNCTION, MAX_LONG_FUNCTIONS = 60, 3


def _code_lines(function: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> int:
    """Lines of code of ``function``: its lines less its docstring, comments and blank lines."""
    body = function.body
    docstring = set()
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        docstring = set(range(body[0].lineno, body[0].end_lineno + 1))
    return sum(1 for number in range(function.lineno, function.end_lineno + 1)
               if number not in docstring and lines[number - 1].strip()
               and not lines[number - 1].strip().startswith("#"))


def _long_functions(path: Path) -> list[tuple[int, str]]:
    text = path.read_text()
    lines = text.split("\n")
    return [(_code_lines(node, lines), f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
            for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _code_lines(node, lines) > LONG_FUNCTION]


def test_modules_and_functions_stay_short():
    python_layers = [path for path, _ in MODULES.values() if ROOT / "kernels" not in path.parents]
    long_modules = {str(path.relative_to(ROOT)): n for path in python_layers
                    if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long_modules, f"modules above {MAX_MODULE_LINES} lines: split them by job: {long_modules}"
    long_functions = sorted((found for path in python_layers for found in _long_functions(path)), reverse=True)
    assert len(long_functions) <= MAX_LONG_FUNCTIONS, (
        f"{len(long_functions)} functions above {LONG_FUNCTION} lines of code (at most {MAX_LONG_FUNCTIONS}): "
        f"{long_functions}")


def test_the_length_check_counts_code_only():
    body = "\n".join(f"    x{i} = {i}  # one\n    # a comment\n" for i in range(LONG_FUNCTION))
    source = f'def long():\n    """A docstring\n\n    of lines."""\n{body}\n    return 0\n\n\ndef short():\n    return 1\n'
    tree = ast.parse(source)
    lines = source.split("\n")
    counted = {node.name: _code_lines(node, lines) for node in tree.body}
    assert counted == {"long": LONG_FUNCTION + 2, "short": 2}  # the def line, the assignments, the return
