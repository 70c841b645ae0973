"""Each sorted-order statistic is written once (``kernels/_statistics.py``, ``kernels/_slots.py``) and
its callers use it: the AUC tie-block walk, the best-F1 sweep, the per-slot accumulation.

AST based, nothing compiles: every caller module calls the shared step, and no kernel module but
the one that defines it holds a second copy of its arithmetic (the tie credit ``b * (2 * n + t)``,
the F1 bound's margin, a call of the F1 formula that skips the bound, or a loop that scans a tie
block of scores).
"""
import ast
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
#: The modules that define the shared steps (their copies are the originals).
HOMES = {"_statistics.py", "_slots.py"}

#: primitive family -> (names that count as using it, modules that must call one of them)
CALLERS = {
    "AUC tie-block walk": ({"credit", "settle", "add_sample", "twice_placement"},
                           {"sweeps", "ranking", "bootstrap", "rank_sums", "voxels", "delong"}),
    "tie-block end": ({"tie_end"}, {"sweeps", "ranking", "delong"}),
    "tie-block start (walks down)": ({"tie_start"}, {"curves", "precision"}),
    "best-F1 sweep": ({"f1_candidate", "cannot_beat"}, {"sweeps", "ranking", "bootstrap", "voxels"}),
    "per-slot accumulation": ({"slots_of"}, {"ranking", "delong"}),
    "threshold position": ({"first_above"}, {"sweeps", "bootstrap"}),
}


def _tree(name: str) -> ast.Module:
    return ast.parse((KERNELS / name).read_text(), filename=name)


def _called(tree: ast.Module) -> set[str]:
    return {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}


def _is_two_times(node: ast.AST) -> bool:
    return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)
            and any(isinstance(side, ast.Constant) and side.value == 2 for side in (node.left, node.right)))


def _copies(tree: ast.Module) -> list[str]:
    """The places in ``tree`` that write a shared step out again."""
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        # the tie credit: block * (2 * below + tied)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            for side in (node.left, node.right):
                if isinstance(side, ast.BinOp) and isinstance(side.op, ast.Add) and _is_two_times(side.left):
                    found.append(f"line {line}: the tie credit b * (2 * n + t)")
        # an untied positive's credit, u2 += 2 * w * below
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and isinstance(node.value, ast.BinOp):
            value = node.value
            if isinstance(value.op, ast.Mult) and (_is_two_times(value.left) or _is_two_times(value.right)):
                found.append(f"line {line}: an untied credit += 2 * w * n")
        # the F1 bound's margin, or the F1 formula called without the bound
        if isinstance(node, ast.Constant) and node.value in (1e-11, 1e-8):
            found.append(f"line {line}: the F1 bound's constant {node.value}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "f1_at":
            found.append(f"line {line}: f1_at called without the bound (f1_candidate)")
        # a scan to the end of a tie block of scores
        if isinstance(node, ast.While):
            for compare in ast.walk(node.test):
                if (isinstance(compare, ast.Compare) and any(isinstance(op, ast.Eq) for op in compare.ops)
                        and any(isinstance(side, ast.Subscript) and isinstance(side.value, ast.Name)
                                and "score" in side.value.id for side in (compare.left, *compare.comparators))):
                    found.append(f"line {line}: a scan to the end of a tie block (tie_end)")
    return found


@pytest.mark.parametrize("family", sorted(CALLERS))
def test_callers_use_the_shared_step(family):
    names, modules = CALLERS[family]
    missing = [module for module in sorted(modules) if not names & _called(_tree(f"{module}.py"))]
    assert not missing, f"{family}: these kernel modules do not call {sorted(names)}: {missing}"


def test_no_kernel_module_writes_a_shared_step_again():
    copies = {path.name: _copies(_tree(path.name)) for path in sorted(KERNELS.glob("*.py")) if path.name not in HOMES}
    copies = {name: places for name, places in copies.items() if places}
    assert not copies, f"write these through kernels/_statistics.py: {copies}"


def test_the_detector_sees_each_kind_of_copy():
    # a test that cannot fail is a defect: each pattern above is found in a module that writes it out
    source = """
def walk(sorted_scores, i, stop, u2, below, block_pos, block_neg, w, tp, fp, n_pos, best):
    end = i + 1
    while end < stop and sorted_scores[end] == sorted_scores[i]:
        end += 1
    u2 += block_pos * (2 * below + block_neg)
    u2 += 2 * w * below
    if 2.0 * tp * (1.0 + 1e-11) < best * (tp + fp + n_pos):
        return f1_at(tp, fp, n_pos)
"""
    kinds = {place.split(": ", 1)[1].split(" (")[0].split(" +=")[0] for place in _copies(ast.parse(source))}
    assert len(kinds) == 5, kinds
    # and the homes hold the originals
    assert _copies(_tree("_statistics.py"))
