"""Run the same call through fairmedfm_fast and the oracle (fairmedfm 0.4.2) and compare the outcomes.

``both("auc_gap", y, p, sensitive_features=g)`` calls ``fairmedfm_fast.auc_gap`` and ``fairmedfm.auc_gap``
on independent deep copies of the arguments, records the warnings each side emits, and returns the
two :class:`Outcome` objects; :func:`assert_same` then checks that both returned values agree within
1e-9 (or both raised a ValueError), and that they emitted the same number of warnings of each
category. The arguments themselves are checked to be unchanged by either call.
"""
from __future__ import annotations

import copy
import importlib
import math
import numbers
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

RTOL = 1e-9
ATOL = 1e-12
VERSION_KEYS = ("fairmedfm_version", "fairmedfm_fast_version")
#: What fairmedfm_fast's classification reports add beside the oracle's: settings in ``metadata``, the
#: ``small_group`` column of ``by_group`` (and its warnings, which name it), the ``gaps`` of to_dict().
EXTRA_METADATA = ("best_f1_threshold", "random_state", "seed", "n_boot", "n_permutations", "ci", "stratify",
                  "p_adjust", "bins", "intersectional", "metrics", "small_group_below", "samples_dropped", "versions",
                  "inputs")
EXTRA_GROUP_COLUMNS = ("small_group",)


@dataclass
class Outcome:
    value: Any = None
    error: BaseException | None = None
    warnings: list = field(default_factory=list)  # (category, message)

    def categories(self, category=UserWarning) -> int:
        return sum(1 for c, _ in self.warnings if issubclass(c, category))


def _target(package: str, name: str):
    module_name, _, attribute = name.rpartition(".")
    module = importlib.import_module(f"{package}.{module_name}" if module_name else package)
    return getattr(module, attribute)


def call(package: str, name: str, *args, **kwargs) -> Outcome:
    """Call ``package.name(*args, **kwargs)``, recording the result, a raised exception and every warning."""
    function = _target(package, name)
    outcome = Outcome()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            outcome.value = function(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - compared by the caller
            outcome.error = error
    outcome.warnings = [(w.category, str(w.message)) for w in caught
                        if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))
                        or issubclass(w.category, FutureWarning)]
    return outcome


def both(name: str, *args, check_unchanged: bool = True, oracle_args=None, **kwargs) -> tuple[Outcome, Outcome]:
    """(fast, oracle) outcomes of ``name``; ``oracle_args=(args, kwargs)`` gives the oracle other inputs."""
    snapshot = copy.deepcopy((args, kwargs))
    fast_args, fast_kwargs = copy.deepcopy((args, kwargs)) if not check_unchanged else (args, kwargs)
    fast = call("fairmedfm_fast", name, *fast_args, **fast_kwargs)
    if check_unchanged:
        assert_unchanged(snapshot, (args, kwargs), f"fairmedfm_fast.{name} modified its inputs")
    o_args, o_kwargs = oracle_args if oracle_args is not None else copy.deepcopy(snapshot)
    oracle = call("fairmedfm", name, *o_args, **o_kwargs)
    return fast, oracle


# --- equality ---------------------------------------------------------------------------------------

def assert_unchanged(before: Any, after: Any, message: str) -> None:
    assert _same_data(before, after), message


def _same_data(a: Any, b: Any) -> bool:
    if isinstance(a, pd.DataFrame):
        return isinstance(b, pd.DataFrame) and a.equals(b) and a.dtypes.equals(b.dtypes)
    if isinstance(a, (pd.Series, pd.Index)):
        return type(a) is type(b) and a.equals(b) and a.dtype == b.dtype and (
            isinstance(a, pd.Index) or a.index.equals(b.index))
    if isinstance(a, np.ndarray):
        if a.dtype == object and isinstance(b, np.ndarray) and b.shape == a.shape:  # NaN among objects
            return b.dtype == object and all(_same_data(x, y) for x, y in zip(a.ravel(), b.ravel()))
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
                and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_data(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same_data(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if hasattr(a, "equals"):  # pyarrow, polars
        return bool(a.equals(b))
    return a is b or a == b or (a is pd.NA and b is pd.NA)


def assert_close(fast: Any, oracle: Any, path: str = "value") -> None:
    """Recursive equality: numbers within RTOL/ATOL (NaN == NaN), ints and strings exact, same keys and lengths."""
    if isinstance(oracle, pd.DataFrame):
        assert_frames(fast, oracle, path)
    elif isinstance(oracle, dict):
        assert isinstance(fast, dict), f"{path}: {type(fast).__name__} instead of dict"
        assert list(fast) == list(oracle), f"{path}: keys {list(fast)} != {list(oracle)}"
        for key in oracle:
            assert_close(fast[key], oracle[key], f"{path}[{key!r}]")
    elif isinstance(oracle, (list, tuple)):
        assert isinstance(fast, (list, tuple)), f"{path}: {type(fast).__name__} instead of {type(oracle).__name__}"
        assert type(fast) is type(oracle), f"{path}: {type(fast).__name__} instead of {type(oracle).__name__}"
        assert len(fast) == len(oracle), f"{path}: length {len(fast)} != {len(oracle)}"
        for i, (a, b) in enumerate(zip(fast, oracle, strict=True)):
            assert_close(a, b, f"{path}[{i}]")
    elif oracle is None:
        assert fast is None, f"{path}: {fast!r} instead of None"
    elif isinstance(oracle, (bool, np.bool_)):
        assert isinstance(fast, (bool, np.bool_)) and bool(fast) == bool(oracle), f"{path}: {fast!r} != {oracle!r}"
    elif isinstance(oracle, numbers.Integral):
        assert isinstance(fast, numbers.Integral) and not isinstance(fast, bool), \
            f"{path}: {fast!r} ({type(fast).__name__}) should be an integer like {oracle!r}"
        assert int(fast) == int(oracle), f"{path}: {fast!r} != {oracle!r}"
    elif isinstance(oracle, numbers.Real):
        assert isinstance(fast, numbers.Real), f"{path}: {fast!r} is not a number (oracle: {oracle!r})"
        a, b = float(fast), float(oracle)
        if math.isnan(b):
            assert math.isnan(a), f"{path}: {a!r} instead of NaN"
        else:
            assert math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL) or a == b, f"{path}: {a!r} != {b!r} (oracle)"
    else:
        assert fast == oracle, f"{path}: {fast!r} != {oracle!r}"


def assert_frames(fast: pd.DataFrame, oracle: pd.DataFrame, name: str) -> None:
    """Same index, columns, dtypes and values within 1e-9 (NaN in the same places)."""
    assert isinstance(fast, pd.DataFrame), f"{name}: {type(fast).__name__} instead of a DataFrame"
    pd.testing.assert_frame_equal(fast, oracle, check_exact=False, rtol=RTOL, atol=ATOL, obj=name)


def assert_reports(fast, oracle) -> None:
    """Two FairnessReports agree: frames, overall, metadata, number of warnings, to_dict."""
    assert type(fast).__name__ == "FairnessReport"
    assert fast.task == oracle.task
    assert_frames(fast.summary, oracle.summary, "summary")
    assert_frames(without_extras(fast.by_group, oracle.by_group), oracle.by_group, "by_group")
    assert_close(fast.overall, oracle.overall, "overall")
    assert_close(oracle_metadata(fast.metadata, oracle.metadata), oracle.metadata, "metadata")
    fast_warnings = [message for message in fast.warnings if "small_group" not in message]
    assert len(fast_warnings) == len(oracle.warnings), (
        f"{len(fast_warnings)} warnings instead of {len(oracle.warnings)}:\n  fast: {fast_warnings}\n"
        f"  oracle: {oracle.warnings}")
    fast_dict = fast.to_dict()
    try:
        oracle_dict = oracle.to_dict()
    except KeyError:
        # The oracle's to_dict() crashes when an attribute has no present value (no by_group rows); ours
        # must not, and there is nothing to compare it with.
        return
    for key in VERSION_KEYS:
        fast_dict.pop(key, None)
        oracle_dict.pop(key, None)
    fast_dict.pop("warnings")
    oracle_dict.pop("warnings")
    if "gaps" not in oracle_dict:
        fast_dict.pop("gaps", None)
    fast_dict["metadata"] = oracle_metadata(fast_dict.get("metadata", {}), oracle_dict.get("metadata", {}))
    for entry in fast_dict.get("attributes", {}).values():
        for group in entry.get("groups", {}).values():
            for column in EXTRA_GROUP_COLUMNS:
                group.pop(column, None)
    assert_close(fast_dict, oracle_dict, "to_dict()")


def oracle_metadata(fast: dict, oracle: dict) -> dict:
    """``fast`` without the settings fairmedfm_fast records beside the oracle's keys (a key of the oracle
    stays, so a value that differs still fails)."""
    return {key: value for key, value in fast.items() if key in oracle or key not in EXTRA_METADATA}


def without_extras(fast, oracle):
    """``fast``'s frame without the columns fairmedfm_fast adds that ``oracle``'s lacks."""
    extra = [column for column in EXTRA_GROUP_COLUMNS if column in fast.columns and column not in oracle.columns]
    return fast.drop(columns=extra) if extra else fast


def assert_same(fast: Outcome, oracle: Outcome, *, warning_categories=(UserWarning, FutureWarning)) -> None:
    """Both raised ValueError, or both returned agreeing values with as many warnings of each category."""
    if oracle.error is not None and not isinstance(oracle.error, ValueError):
        # The oracle's own crash (e.g. KeyError from pandas when every value of an attribute is missing):
        # there is no oracle behaviour to copy. We must not crash: a ValueError or a result are both fine.
        assert fast.error is None or isinstance(fast.error, ValueError), \
            f"fairmedfm_fast raised {fast.error!r} (the oracle crashed with {oracle.error!r})"
        return
    if oracle.error is not None:
        assert fast.error is not None, f"the oracle raised {oracle.error!r}; fairmedfm_fast returned {fast.value!r}"
        assert isinstance(fast.error, ValueError), f"fairmedfm_fast raised {fast.error!r} instead of a ValueError"
        return
    if fast.error is not None:
        raise AssertionError(f"fairmedfm_fast raised {fast.error!r}; the oracle returned {oracle.value!r}") \
            from fast.error
    if type(oracle.value).__name__ == "FairnessReport":
        assert_reports(fast.value, oracle.value)
    else:
        assert type(fast.value) is type(oracle.value) or (
            isinstance(oracle.value, float) and isinstance(fast.value, float)), \
            f"returned {type(fast.value).__name__}, the oracle {type(oracle.value).__name__}"
        assert_close(fast.value, oracle.value)
    # evaluate also issues its note about logits it detected as a UserWarning (none for score_type="logit");
    # fairmedfm lists it in report.warnings only
    converted = sum("read as logits" in message for c, message in fast.warnings if issubclass(c, UserWarning)) \
        if type(fast.value).__name__ == "FairnessReport" else 0
    for category in warning_categories:
        extra = converted if issubclass(UserWarning, category) else 0
        assert fast.categories(category) - extra == oracle.categories(category), (
            f"{fast.categories(category)} {category.__name__}s instead of {oracle.categories(category)}:\n"
            f"  fast: {[m for c, m in fast.warnings if issubclass(c, category)]}\n"
            f"  oracle: {[m for c, m in oracle.warnings if issubclass(c, category)]}")


def check(name: str, *args, **kwargs) -> tuple[Outcome, Outcome]:
    """:func:`both` followed by :func:`assert_same`; returns the outcomes for further checks."""
    fast, oracle = both(name, *args, **kwargs)
    assert_same(fast, oracle)
    return fast, oracle
