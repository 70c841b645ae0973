"""Hypothesis strategies: the edge-case generator shared by the kernel and the API tests.

Hypothesis chooses the *shape* of a case (sample count, kind of scores, kind of labels, number of
attributes and groups, missing values, dtype, memory layout); a NumPy generator seeded by Hypothesis
fills in the bulk values, so that cases of a few hundred samples stay cheap to generate and still
shrink to a small reproducer. Kinds of scores:

- ``continuous``: uniform in [0, 1), almost surely distinct;
- ``ties``: drawn from a pool of 1 to 6 values (heavy ties);
- ``edges``: every score of a group lies exactly on one of that group's ECE bin edges
  (``numpy.linspace(lo, hi, 11)``, including ``lo`` and ``hi``);
- ``extremes``: 0, 1, 0.5 and values within 1e-12 of them;
- ``constant``: all samples share one score; ``group_constant``: each group has its own constant;
- ``tiny_range``: distinct values within 1e-9 of each other;
- ``logits``: normal with standard deviation 4 (for the API only: not probabilities).

Kinds of labels: ``random`` (both labels, any balance), ``single_label_groups`` (some groups have only
one label), ``rare`` (one or two positives). Groups: 1 to 3 attributes with 1 to 50 groups each,
optionally with missing values (code -1) and single-sample groups.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

PROBABILITY_KINDS = ("continuous", "ties", "edges", "extremes", "constant", "group_constant", "tiny_range")
LAYOUTS = ("contiguous", "readonly", "strided", "readonly_strided")
#: float64 values whose keys a radix sort gets wrong most easily: signed zeros, subnormals, the
#: neighbours of 0.5, the largest finite values and the infinities.
SPECIAL_FLOAT64 = st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, -1e-310, 1.0, -1.0, 0.5,
                                   np.nextafter(0.5, 1), np.nextafter(0.5, 0), 1e308, -1e308, np.inf, -np.inf])


@dataclass
class Case:
    """One generated classification case, as the kernels see it."""

    scores: np.ndarray  # float64, shape (n,)
    labels: np.ndarray  # uint8 0/1, shape (n,)
    codes: np.ndarray  # intp, shape (K, n); -1 = missing
    n_groups: np.ndarray  # int64, shape (K,)
    kind: str = ""
    notes: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return self.scores.shape[0]

    def slots(self):
        """(k, slot, mask) for every slot: each group of grouping k, then the grouping's present samples."""
        slot = 0
        for k in range(self.codes.shape[0]):
            for g in range(int(self.n_groups[k])):
                yield k, slot, self.codes[k] == g
                slot += 1
            yield k, slot, self.codes[k] >= 0
            slot += 1


def with_layout(array: np.ndarray, layout: str, dtype=None) -> np.ndarray:
    """A copy of ``array`` (optionally cast to ``dtype``) that is read-only and/or strided (non-contiguous)."""
    array = np.asarray(array, dtype=dtype if dtype is not None else None)
    if "strided" in layout:
        # Every other element of a buffer twice as long (along the last axis): non-contiguous.
        buffer = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), dtype=array.dtype)
        buffer[..., ::2] = array
        out = buffer[..., ::2]
        assert not out.flags.c_contiguous or array.shape[-1] <= 1
    else:
        out = array.copy()
    if "readonly" in layout:
        out.setflags(write=False)
    return out


def _scores(rng: np.random.Generator, kind: str, codes0: np.ndarray, n: int) -> np.ndarray:
    if kind == "continuous":
        return rng.random(n)
    if kind == "ties":
        pool = rng.random(int(rng.integers(1, 7)))
        return rng.choice(pool, n)
    if kind == "extremes":
        pool = np.array([0.0, 1.0, 0.5, 1e-12, 1.0 - 1e-12, 0.5 + 1e-12, 0.5 - 1e-12])
        return rng.choice(pool, n)
    if kind == "constant":
        value = rng.choice([0.0, 1.0, 0.5, float(rng.random())])
        return np.full(n, value)
    if kind == "tiny_range":
        return 0.3 + rng.integers(0, 10, n) * 1e-10
    if kind == "logits":
        return rng.normal(0.0, 4.0, n)
    scores = np.empty(n)
    for g in np.unique(codes0):
        members = np.flatnonzero(codes0 == g)
        if kind == "group_constant":
            scores[members] = rng.choice([0.0, 1.0, float(rng.random())])
        elif kind == "edges":
            lo, hi = np.sort(rng.choice([0.0, 1.0, float(rng.random()), float(rng.random())], 2, replace=False))
            edges = np.linspace(lo, hi, 11)
            values = rng.choice(edges, len(members))
            values[0], values[-1] = lo, hi  # the group's range is exactly [lo, hi]
            scores[members] = values
        else:
            raise ValueError(kind)
    return scores


def _labels(rng: np.random.Generator, kind: str, codes0: np.ndarray, n: int) -> np.ndarray:
    if kind == "rare":
        labels = np.zeros(n, np.uint8)
        labels[rng.choice(n, min(n, int(rng.integers(1, 3))), replace=False)] = 1
        return labels
    labels = (rng.random(n) < rng.uniform(0.1, 0.9)).astype(np.uint8)
    if kind == "single_label_groups":
        groups = np.unique(codes0[codes0 >= 0])
        for g in groups[: max(1, len(groups) // 3)]:
            labels[codes0 == g] = rng.integers(0, 2)
    return labels


def _codes(rng: np.random.Generator, n: int, n_groups: int, missing: float, singletons: bool) -> np.ndarray:
    codes = rng.integers(0, n_groups, n).astype(np.intp)
    if n >= n_groups:  # every group present at least once
        codes[rng.permutation(n)[:n_groups]] = np.arange(n_groups)
    if singletons and n_groups >= 2 and n > n_groups:
        # Group 0 gets exactly one sample (moved into group 1 otherwise).
        first = np.flatnonzero(codes == 0)
        codes[first[1:]] = 1
    if missing:
        codes[rng.random(n) < missing] = -1
    return codes


@st.composite
def cases(draw, max_n: int = 300, max_groupings: int = 3, max_groups: int = 50, kinds=PROBABILITY_KINDS,
          both_labels: bool = False) -> Case:
    """A :class:`Case` for the kernels: scores, 0/1 labels and a (K, n) code matrix."""
    n = draw(st.integers(1, max_n))
    n_groupings = draw(st.integers(1, max_groupings))
    group_counts = [draw(st.integers(1, min(max_groups, n) if n > 1 else 1)) for _ in range(n_groupings)]
    missing = draw(st.sampled_from([0.0, 0.0, 0.1, 0.5]))
    singletons = draw(st.booleans())
    kind = draw(st.sampled_from(kinds))
    label_kind = draw(st.sampled_from(["random", "random", "single_label_groups", "rare"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    codes = np.stack([_codes(rng, n, g, missing, singletons) for g in group_counts])
    scores = _scores(rng, kind, codes[0], n)
    labels = _labels(rng, label_kind, codes[0], n)
    if both_labels and n >= 2 and labels.min() == labels.max():
        labels[0] = 1 - labels[0]
    return Case(scores.astype(np.float64), labels, codes, np.array(group_counts, np.int64), kind,
                {"labels": label_kind, "missing": missing, "singletons": singletons, "seed": seed})


# --- API-level cases --------------------------------------------------------------------------------

GROUP_NAMINGS = ("strings", "integers", "floats", "categorical", "booleans")


def group_values(rng: np.random.Generator, codes: np.ndarray, naming: str, missing_kind: str = "none"):
    """Turn integer codes (-1 = missing) into attribute values of the given kind (a list or pandas object)."""
    import pandas as pd

    n_groups = int(codes.max()) + 1 if codes.size and codes.max() >= 0 else 1
    if naming == "strings":
        names = np.array([f"g{i:02d}" if i % 3 else f"G{i}" for i in range(n_groups)], dtype=object)
        names = names[rng.permutation(n_groups)]  # codes are not in name order
    elif naming == "integers":
        names = np.array(rng.permutation(n_groups) * 7 - 3, dtype=object)
    elif naming == "floats":
        # Whole floats ("1", not "1.0") mixed with fractional ones.
        names = np.array([float(i) if i % 2 == 0 else i + 0.5 for i in rng.permutation(n_groups)], dtype=object)
    elif naming == "booleans":
        names = np.array([True, False][:n_groups] + [None] * max(0, n_groups - 2), dtype=object)
    elif naming == "categorical":
        names = np.array([f"c{i}" for i in range(n_groups)], dtype=object)
    else:
        raise ValueError(naming)
    missing_value = {"none": None, "None": None, "nan": float("nan"), "NA": pd.NA}[missing_kind]
    values = [names[c] if c >= 0 else missing_value for c in codes]
    if naming == "categorical":
        # Category order deliberately differs from alphabetical; one unused category.
        categories = list(names[rng.permutation(n_groups)]) + ["unused"]
        return pd.Series(pd.Categorical([v if isinstance(v, str) else None for v in values], categories=categories))
    if naming in ("integers", "floats") and missing_kind in ("none", "nan") and not any(v is None for v in values):
        return np.array(values, dtype=np.float64 if naming == "floats" or missing_kind == "nan" else np.int64)
    return values


@st.composite
def api_cases(draw, max_n: int = 120, max_attributes: int = 3, max_groups: int = 12, logits: bool = True):
    """Keyword arguments for ``evaluate``: 0/1 labels, probabilities (or logits) and a DataFrame of attributes.

    Some cases have groups with one label or one sample, missing attribute values, integer, float,
    boolean or categorical attributes. Both labels always occur overall (the oracle requires it).
    """
    import pandas as pd

    kinds = PROBABILITY_KINDS + (("logits",) if logits else ())
    case = draw(cases(max_n=max_n, max_groupings=max_attributes, max_groups=max_groups, kinds=kinds,
                      both_labels=True))
    if case.n < 2:
        case = draw(cases(max_n=max_n, max_groupings=max_attributes, max_groups=max_groups, kinds=kinds,
                          both_labels=True).filter(lambda c: c.n >= 2))
    rng = np.random.default_rng(case.notes["seed"] + 1)
    columns = {}
    for k in range(case.codes.shape[0]):
        naming = draw(st.sampled_from(GROUP_NAMINGS if case.n_groups[k] <= 2 else GROUP_NAMINGS[:4]))
        missing_kind = draw(st.sampled_from(["None", "nan", "NA"])) if (case.codes[k] < 0).any() else "none"
        columns[f"attr{k}" if k else "sex"] = group_values(rng, case.codes[k], naming, missing_kind)
    frame = pd.DataFrame(columns)  # pandas Series (categorical) have the same RangeIndex
    return {"y_true": case.labels.astype(np.int64), "y_score": case.scores, "sensitive_features": frame,
            "case": case}


LABEL_FORMS = ("01", "bool", "strings", "one_hot", "multi_class")
SCORE_FORMS = ("1d", "float32", "proba_2col", "logits_2col", "column_n1")


@st.composite
def input_forms(draw, data: dict):
    """Re-express an :func:`api_cases` case in another input form: (args, kwargs) for ``evaluate``.

    Labels as 0/1, booleans, strings with ``pos_label``, one-hot rows or three classes with
    ``pos_label``; scores as 1-D, float32, (n, 2) probabilities or logits, or an (n, 1) column; an
    extra continuous attribute grouped with ``bins`` (cut points or quantiles); and pandas inputs
    whose unique index labels are in a different order (paired by label, with a warning).
    """
    import pandas as pd

    y, scores, frame = data["y_true"], data["y_score"], data["sensitive_features"].copy()
    n = len(y)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kwargs = {}
    label_form = draw(st.sampled_from(LABEL_FORMS))
    if label_form == "bool":
        labels = y.astype(bool)
    elif label_form == "strings":
        labels = np.where(y == 1, "sick", "healthy")
        kwargs["pos_label"] = "sick"
    elif label_form == "one_hot":
        labels = np.eye(2, dtype=np.int64)[y]
    elif label_form == "multi_class":
        labels = np.where(y == 1, 2, rng.integers(0, 2, n))
        kwargs["pos_label"] = 2
    else:
        labels = y
    score_form = draw(st.sampled_from(SCORE_FORMS))
    if score_form == "float32":
        y_score = scores.astype(np.float32)
    elif score_form == "proba_2col" and scores.min() >= 0 and scores.max() <= 1 and label_form != "multi_class":
        y_score = np.column_stack([1 - scores, scores])
    elif score_form == "logits_2col" and label_form != "multi_class":
        y_score = np.column_stack([-scores / 2, scores / 2])
    elif score_form == "column_n1":
        y_score = scores[:, None]
    else:
        y_score = scores
    if draw(st.booleans()):
        age = rng.integers(18, 95, n).astype(np.float64)
        age[rng.random(n) < 0.05] = np.nan
        frame["age"] = age
        kwargs["bins"] = {"age": draw(st.sampled_from([[40, 60], [50], [30.5, 45, 70], 2, 3, 4]))}
    if draw(st.booleans()):
        kwargs["intersectional"] = True
    if draw(st.booleans()):
        # Unique index labels; the attribute table comes in a shuffled row order and must be re-paired.
        index = pd.Index([f"id{i:04d}" for i in rng.permutation(n)])
        labels = pd.Series(list(labels) if np.ndim(labels) > 1 else labels, index=index) \
            if np.ndim(labels) == 1 else labels
        frame = frame.set_axis(index)
        shuffle = rng.permutation(n)
        frame = frame.iloc[shuffle]
        if not isinstance(labels, pd.Series):
            # 2-D labels cannot be a Series: make the scores the reference pandas input instead.
            if np.ndim(y_score) == 1:
                y_score = pd.Series(y_score, index=index)
            else:
                y_score = pd.DataFrame(y_score, index=index)
    note_text = f"labels={label_form} scores={score_form} kwargs={kwargs}"
    return (labels, y_score, frame), kwargs, note_text


def examples(fraction: float):
    """Hypothesis settings with ``fraction`` of the loaded profile's ``max_examples`` (for the slow oracle)."""
    from hypothesis import settings

    return settings(max_examples=max(5, int(settings().max_examples * fraction)))
