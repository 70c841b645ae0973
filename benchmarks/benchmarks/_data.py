"""Deterministic inputs for the benchmarks: the asv suite, ``compare.py`` and ``tests/test_benchmarks.py``.

Everything here depends on NumPy and pandas only (nibabel for ``.nii.gz`` files), so that it imports in any
environment the package itself installs into. The same arguments always give the same arrays.

Classification cases model a screening classifier: up to three sensitive attributes ("site" with
``n_groups`` groups of unequal size, "sex" with 2 and "age" with 4), a prevalence and a separation that vary
by group, and probabilities from a logistic link. Segmentation cases are pairs of uint8 volumes holding a
predicted and a true ellipsoid that overlap by construction (Dice around 0.8 to 0.95).
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ATTRIBUTES = ("site", "sex", "age")
# Upper limits on the size of every case; ``tests/test_benchmarks.py`` sets them low to run each benchmark
# body once on tiny inputs. None means no limit.
LIMITS: dict = {"n_samples": None, "edge": None}
EXTRA_GROUPS = (2, 4)  # groups of the second and third attribute; the first has ``n_groups``


def group_names(n_groups: int) -> list[str]:
    """Zero-padded names, so that alphabetical order is code order (as both implementations report it)."""
    width = len(str(n_groups - 1))
    return [f"g{i:0{width}d}" for i in range(n_groups)]


@dataclass(frozen=True)
class Classification:
    """One classification input, as arrays and in the forms users pass to ``evaluate``."""

    y_true: np.ndarray  # uint8 of shape (n,), 0 or 1
    y_score: np.ndarray  # float64 of shape (n,), probabilities in (0, 1)
    codes: np.ndarray  # intp of shape (K, n), group code per attribute
    n_groups: np.ndarray  # int64 of shape (K,)

    @property
    def n_samples(self) -> int:
        return self.y_true.shape[0]

    @property
    def names(self) -> tuple[str, ...]:
        return ATTRIBUTES[: self.codes.shape[0]]

    def column(self, k: int, kind: str = "str") -> pd.Series:
        """Attribute ``k`` as a pandas Series of strings (``str``, as read from a CSV file) or ``category``."""
        categories = group_names(int(self.n_groups[k]))
        if kind == "category":
            values = pd.Categorical.from_codes(self.codes[k], categories=categories)
        elif kind == "str":
            values = np.asarray(categories, dtype=object)[self.codes[k]]
        else:
            raise ValueError(f"kind must be 'category' or 'str', got {kind!r}")
        return pd.Series(values, name=self.names[k])

    def sensitive(self, kind: str = "str"):
        """``sensitive_features``: a Series for one attribute, a DataFrame for several."""
        if self.codes.shape[0] == 1:
            return self.column(0, kind)
        return pd.DataFrame({name: self.column(k, kind) for k, name in enumerate(self.names)})

    def intersection_codes(self) -> np.ndarray:
        """Codes of the combined attribute ("g1 & F & ..."), in product order, shape (n,)."""
        combined = np.zeros(self.n_samples, np.intp)
        for k in range(self.codes.shape[0]):
            combined = combined * int(self.n_groups[k]) + self.codes[k]
        return combined

    def sorted_arrays(self):
        """Scores, labels and codes in ascending score order (stable), as the ranking kernels take them."""
        order = np.argsort(self.y_score, kind="stable")
        return (self.y_score[order], self.y_true[order], np.ascontiguousarray(self.codes[:, order]))


def classification(n_samples: int, n_attributes: int = 1, n_groups: int = 2, seed: int = 0) -> Classification:
    """A classification case with ``n_attributes`` (1 to 3) attributes; the first has ``n_groups`` groups."""
    if not 1 <= n_attributes <= len(ATTRIBUTES):
        raise ValueError(f"n_attributes must be 1 to {len(ATTRIBUTES)}, got {n_attributes}")
    if LIMITS["n_samples"] is not None:
        n_samples = min(n_samples, LIMITS["n_samples"])
    rng = np.random.default_rng([seed, n_samples, n_attributes, n_groups])
    sizes = (n_groups,) + EXTRA_GROUPS[: n_attributes - 1]
    codes = np.empty((n_attributes, n_samples), np.intp)
    for k, size in enumerate(sizes):
        weights = 1.0 / np.sqrt(np.arange(1, size + 1))  # unequal group sizes, largest first
        cumulative = np.cumsum(weights / weights.sum())
        cumulative[-1] = 1.0
        codes[k] = np.searchsorted(cumulative, rng.random(n_samples), side="right")
    site = codes[0] / max(n_groups - 1, 1)  # 0 .. 1 across the first attribute's groups
    prevalence = 0.15 + 0.3 * site
    y_true = (rng.random(n_samples) < prevalence).astype(np.uint8)
    separation = 1.8 - 0.8 * site
    if n_attributes > 1:
        separation = separation - 0.3 * codes[1]
    logits = -1.0 + separation * (2.0 * y_true - 1.0) + rng.standard_normal(n_samples)
    y_score = 1.0 / (1.0 + np.exp(-logits))
    return Classification(y_true, y_score, codes, np.asarray(sizes, np.int64))


# ------------------------------------------------------------------------------------------------------------
# Segmentation


def prediction_table(n_samples: int, path: str | Path, seed: int = 0) -> Path:
    """A predictions table as an evaluation job exports it, written to ``path`` (Parquet, or CSV when
    the name ends in .csv): image_id, label, prob and three text attributes (sex, age_group, race)."""
    import pyarrow as pa

    rng = np.random.default_rng([seed, n_samples])
    label = rng.integers(0, 2, n_samples).astype(np.int64)
    prob = np.clip(0.25 * label + 0.75 * rng.random(n_samples), 0, 1)
    table = pa.table({"image_id": np.arange(n_samples), "label": label, "prob": prob,
                      "sex": np.array(["F", "M"])[rng.integers(0, 2, n_samples)],
                      "age_group": np.array(["<40", "40-60", ">=60"])[rng.integers(0, 3, n_samples)],
                      "race": np.array(["white", "black", "asian", "other"])[rng.integers(0, 4, n_samples)]})
    path = Path(path)
    if path.suffix == ".csv":
        import pyarrow.csv

        pyarrow.csv.write_csv(table, path)
    else:
        import pyarrow.parquet

        pyarrow.parquet.write_table(table, path)
    return path


def ellipsoid(shape: tuple[int, int, int], center, radii) -> np.ndarray:
    """uint8 volume, 1 inside the ellipsoid; built one slice at a time to keep temporaries small."""
    axes = [(np.arange(size, dtype=np.float64) - c) / r for size, c, r in zip(shape, center, radii, strict=True)]
    plane = axes[1][:, None] ** 2 + axes[2][None, :] ** 2
    volume = np.zeros(shape, np.uint8)
    for i, offset in enumerate(axes[0] ** 2):
        np.less_equal(plane, 1.0 - offset, out=volume[i].view(bool))
    return volume


@dataclass(frozen=True)
class Segmentation:
    """Pairs of (predicted, true) uint8 volumes and the group of each pair."""

    pred: list  # uint8 arrays, or paths of mask files (see :func:`mask_files`)
    true: list
    groups: np.ndarray  # object array of group names, shape (n_cases,)

    @property
    def n_cases(self) -> int:
        return len(self.pred)

    @property
    def mask_bytes(self) -> int:
        """Bytes of every predicted and true mask together (what a Dice pass must read)."""
        return sum(m.nbytes for m in self.pred) + sum(m.nbytes for m in self.true)


def segmentation(shape: tuple[int, int, int], n_cases: int = 2, seed: int = 0) -> Segmentation:
    """``n_cases`` volume pairs in two groups ("A", "B", alternating); group B's predictions are worse."""
    shape = _limited(shape)
    rng = np.random.default_rng([seed, *shape, n_cases])
    pred, true = [], []
    for i in range(n_cases):
        center = np.array(shape) * rng.uniform(0.4, 0.6, 3)
        radii = np.array(shape) * rng.uniform(0.15, 0.3, 3)
        shift = 0.04 if i % 2 == 0 else 0.1
        true.append(ellipsoid(shape, center, radii))
        pred.append(ellipsoid(shape, center + np.array(shape) * shift * rng.uniform(-1, 1, 3),
                              radii * rng.uniform(0.9, 1.1, 3)))
    return Segmentation(pred, true, _segmentation_groups(n_cases))


def _limited(shape) -> tuple[int, ...]:
    edge = LIMITS["edge"]
    return tuple(int(s) if edge is None else min(int(s), edge) for s in shape)


def _segmentation_groups(n_cases: int) -> np.ndarray:
    return np.array(["A" if i % 2 == 0 else "B" for i in range(n_cases)], dtype=object)


def cache_dir() -> Path:
    """Where mask files are written once and reused: ``$FAIRMEDFM_FAST_BENCH_CACHE`` or the temp folder."""
    folder = os.environ.get("FAIRMEDFM_FAST_BENCH_CACHE") or os.path.join(tempfile.gettempdir(),
                                                                       "fairmedfm_fast_bench")
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _save(array: np.ndarray, path: Path) -> None:
    partial = path.with_name(f".{os.getpid()}.{path.name}")
    if path.name.endswith(".npy"):
        with open(partial, "wb") as stream:
            np.save(stream, array)
    elif path.name.endswith(".nii.gz"):
        import nibabel

        nibabel.save(nibabel.Nifti1Image(array, np.eye(4)), str(partial))  # the name keeps .nii.gz
    else:
        raise ValueError(f"unsupported mask file {path.name}")
    os.replace(partial, path)  # atomic: a concurrent reader sees the whole file or none


def mask_files(shape: tuple[int, int, int], n_cases: int, suffix: str, seed: int = 0) -> Segmentation:
    """:func:`segmentation` saved as ``suffix`` files (.npy or .nii.gz): a Segmentation of path strings.

    Files are written on first use into :func:`cache_dir` and reused by later calls and processes.
    """
    if suffix not in (".npy", ".nii.gz"):
        raise ValueError(f"suffix must be '.npy' or '.nii.gz', got {suffix!r}")
    shape = _limited(shape)
    folder = cache_dir() / f"{'x'.join(map(str, shape))}-{n_cases}-{seed}"
    folder.mkdir(exist_ok=True)
    pred_paths = [folder / f"pred{i:03d}{suffix}" for i in range(n_cases)]
    true_paths = [folder / f"true{i:03d}{suffix}" for i in range(n_cases)]
    case = None
    for i, (p, t) in enumerate(zip(pred_paths, true_paths, strict=True)):
        if p.exists() and t.exists():
            continue
        case = case or segmentation(shape, n_cases, seed)
        _save(case.pred[i], p)
        _save(case.true[i], t)
    return Segmentation([str(p) for p in pred_paths], [str(t) for t in true_paths], _segmentation_groups(n_cases))
