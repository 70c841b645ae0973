"""Each sorted-order statistic is written once (``kernels/_statistics.py``, ``kernels/_slots.py``) and
its callers use it: the AUC tie-block walk, the best-F1 sweep, the per-slot accumulation. So are the
radix sort's key-and-payload scatter (``sorting._scatter_digit``) and the segmentation kernels'
interval rule (``segmentation.inside``).

AST based, nothing compiles: every caller module calls the shared step, and no kernel module but
the one that defines it holds a second copy of its arithmetic (the tie credit ``b * (2 * n + t)``,
the F1 bound's margin, a call of the F1 formula that skips the bound, a loop that scans a tie
block of scores, or a walk that enters a listed tie block by hand); nor does a second function of
``sorting`` scatter keys and payloads, or a second function of ``segmentation`` test an interval.
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
    "tie-block start (walks down)": ({"tie_start"}, {"precision"}),
    "best-F1 sweep": ({"f1_candidate", "cannot_beat"}, {"sweeps", "ranking", "bootstrap", "voxels"}),
    "per-slot accumulation": ({"slots_of"}, {"ranking", "delong", "calibration"}),
    "tie-block tally by slot": ({"tally_block"}, {"ranking", "delong"}),
    "threshold position": ({"first_above"}, {"bootstrap"}),  # sweeps: ndarray.searchsorted (main 1f8bab2)
    "listed tie blocks": ({"enter_block"}, {"bootstrap"}),
    "key-and-payload radix scatter": ({"_scatter_digit"}, {"sorting"}),
    "interval rule": ({"inside"}, {"segmentation"}),
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
        # a listed tie block entered by hand: its end read from the list
        if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name)
                and node.value.id.endswith("_ends")):
            found.append(f"line {line}: a listed tie block entered by hand (enter_block)")
    return found


def _rewalks(tree: ast.Module) -> list[str]:
    """The functions that find a tie block's slots by walking its samples again: a loop over the
    samples whose body tests a slot's block counts, ``block_pos[slot] + block_neg[slot]`` against 0
    (what :func:`tally_block`'s list of the block's slots replaces)."""
    found = []
    for function in _functions(tree):
        for loop in (node for node in ast.walk(function) if isinstance(node, ast.For)):
            tests = [node.test for node in ast.walk(loop) if isinstance(node, ast.If)]
            if any(isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)
                   and all(isinstance(side, ast.Subscript) and isinstance(side.slice, ast.Name)
                           and side.slice.id == "slot" and isinstance(side.value, ast.Name)
                           and side.value.id.startswith("block_") for side in (node.left, node.right))
                   for test in tests for node in ast.walk(test)) and function.name not in found:
                found.append(function.name)
    return found


def _functions(tree: ast.Module) -> list[ast.FunctionDef]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]


def _scatters(tree: ast.Module) -> list[str]:
    """The functions that hold a key-and-payload radix scatter: a loop that stores two arrays at one
    position ``p`` and moves a bucket's next position to ``p + 1``."""
    found = []
    for function in _functions(tree):
        for loop in (node for node in ast.walk(function) if isinstance(node, ast.For)):
            stored, advanced = {}, set()
            for node in ast.walk(loop):
                if not (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript)):
                    continue
                target, value = node.targets[0], node.value
                if isinstance(target.slice, ast.Name):
                    stored.setdefault(target.slice.id, set()).add(ast.unparse(target.value))
                if (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and isinstance(value.left, ast.Name)
                        and isinstance(value.right, ast.Constant) and value.right.value == 1):
                    advanced.add(value.left.id)
            if any(len(stored.get(name, ())) >= 2 for name in advanced) and function.name not in found:
                found.append(function.name)
    return found


def _interval_tests(tree: ast.Module) -> list[str]:
    """The functions that write the interval rule ``(v >= low) & (v <= high)`` out."""
    def bound(side):
        return isinstance(side, ast.Compare) and len(side.ops) == 1 and isinstance(side.ops[0], (ast.GtE, ast.LtE))
    return [function.name for function in _functions(tree) if any(
        isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd) and bound(node.left) and bound(node.right)
        for node in ast.walk(function))]


@pytest.mark.parametrize("family", sorted(CALLERS))
def test_callers_use_the_shared_step(family):
    names, modules = CALLERS[family]
    missing = [module for module in sorted(modules) if not names & _called(_tree(f"{module}.py"))]
    assert not missing, f"{family}: these kernel modules do not call {sorted(names)}: {missing}"


def test_no_kernel_module_writes_a_shared_step_again():
    copies = {path.name: _copies(_tree(path.name)) for path in sorted(KERNELS.glob("*.py")) if path.name not in HOMES}
    copies = {name: places for name, places in copies.items() if places}
    assert not copies, f"write these through kernels/_statistics.py: {copies}"


def test_the_sort_scatters_keys_and_payloads_in_one_place():
    assert _scatters(_tree("sorting.py")) == ["_scatter_digit"]


def test_the_tally_callers_do_not_walk_a_tie_block_again():
    # (rank_sums and precision still do, in walks of their own: packed words, and one grouping at a
    # time from the highest score down)
    _, modules = CALLERS["tie-block tally by slot"]
    assert {module: _rewalks(_tree(f"{module}.py")) for module in sorted(modules)} == {m: [] for m in sorted(modules)}


def test_segmentation_writes_the_interval_rule_once():
    # (kernels/surface.py still writes it out, in its own loops)
    assert _interval_tests(_tree("segmentation.py")) == ["inside"]


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
    block_end = block_ends[next_block]
"""
    kinds = {place.split(": ", 1)[1].split(" (")[0].split(" +=")[0] for place in _copies(ast.parse(source))}
    assert len(kinds) == 6, kinds
    # a second scatter and a second interval test are seen too
    scatter = """
def scatter_again(keys, pays, to_keys, to_pays, starts, start, stop):
    for i in range(start, stop):
        key = keys[i]
        position = starts[key & 255]
        to_keys[position] = key
        to_pays[position] = pays[i]
        starts[key & 255] = position + 1
"""
    assert _scatters(ast.parse(scatter)) == ["scatter_again"]
    assert _interval_tests(ast.parse("def rule(v, lo, hi):\n    return (v >= lo) & (v <= hi)\n")) == ["rule"]
    rewalk = """
def settle_again(sorted_codes, offsets, start, stop, block_pos, block_neg, u2, neg_below):
    for i in range(start, stop):
        slot = offsets[0] + sorted_codes[0, i]
        if block_pos[slot] + block_neg[slot] > 0:
            u2[slot], neg_below[slot] = credit(u2[slot], neg_below[slot], block_pos[slot], block_neg[slot])
"""
    assert _rewalks(ast.parse(rewalk)) == ["settle_again"]
    assert _rewalks(_tree("precision.py")) == ["precision_sums"]  # an original one, still written out
    # and the homes hold the originals
    assert _copies(_tree("_statistics.py"))
