"""Fairness of a binary classifier accumulated batch by batch: :class:`FairnessAccumulator`.

The state is a table of distinct (score, label, group cell) rows with their sample counts (and summed
sample weights), in which new batches wait as plain rows until a compaction sorts and merges them
into it. :meth:`FairnessAccumulator.result` hands the table to the engine with the counts as
integer weights, which gives what :func:`~fairmedfm_fast.evaluate` gives on every batch
concatenated (counts, AUC and thresholds exactly: the weighted sums of integer counts are exact).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._engine import classification as _engine
from .._engine import resample as _resample
from .._inputs import arrays as _inputs
from .._inputs import groups as _groups
from .._inputs import value_codes as _codes
from .._registry import metrics as _metric_registry
from .._report.assembly import asked, assemble
from .._report.frame import FairnessReport
from .._util import progress as _progress
from .accumulator_batches import (
    PLURAL,
    batch_weights,
    categorical_names,
    joined_columns,
    reads_as_other,
    require_rows_sum_to_one,
    text_columns,
    text_form,
    widest,
)
from .accumulator_state import SegmentState
from .accumulator_text import batch_keys, settled_keys, table_rows
from .assess import as_python, attribute_result, range_conversion, transform_note, with_default
from .checks import (
    check_count,
    check_cut_points,
    check_interval,
    check_min_group_size,
    check_resampling,
    check_threshold,
    cut_point_groups,
)
from .uncertainty import with_uncertainty

__all__ = ["FairnessAccumulator"]

#: Waiting rows are merged into the table once there are this many, and at least as many as the
#: table holds (so that every row is sorted a bounded number of times on average).
COMPACT_FROM = 1 << 17
#: A compaction that finds more distinct scores than a 16-bit type holds stops the merging: the rows
#: are kept as they come from then on (no count column: 8 bytes a float32 sample), and the report
#: takes them as ``evaluate`` takes its samples.
DISTINCT_SCORES = 1 << 16
#: Batches of text attributes (without missing values) wait uncoded, kept as they came, until this many
#: samples wait, a compaction or the report: Arrow text is then keyed by the tables of the groups known
#: (:mod:`.accumulator_text`, the batches side by side on threads), other text joined and coded at once
#: as ``evaluate`` codes the concatenated batches (a small batch alone costs more in fixed costs than
#: its values).
SETTLE_FROM = 1 << 19


class FairnessAccumulator(SegmentState):
    """Classification fairness accumulated over batches; :meth:`result` is the report of
    :func:`fairmedfm_fast.evaluate` on every batch concatenated.

    Parameters
    ----------
    pos_label, score_type, score_column, intersectional, metrics
        As in :func:`fairmedfm_fast.evaluate`; they say how every batch is read, so they are fixed
        here. ``score_type="auto"`` is settled by the first batch (probabilities when its scores are
        within [0, 1], or its score rows sum to one); a later batch that does not fit it is an error
        that says to pass ``score_type``. With a (n, k) ``y_score`` and a ``pos_label`` the score
        column is settled by the first batch, which must then hold every class (or pass
        ``score_column``).
    bins : dict, optional
        Cut points of numeric attributes, such as ``{"age": [40, 60]}``. Quantile groups
        (``{"age": 4}``) need every value at once, which an accumulator does not keep: compute the
        cut points first (for example ``np.quantile`` on the training set) and pass them.

    Notes
    -----
    Groups are found as batches come; the report lists them in the order
    :func:`~fairmedfm_fast.evaluate` gives (by value; cut-point order for binned attributes).
    Memory: the table holds one row per distinct (score, label, group cell) with a count, so 16-bit
    scores (float16, bfloat16, or any scores with at most 65,536 distinct values) keep it bounded by
    ``distinct scores x 2 x cells`` rows (16 bytes each for float32 scores, 20 for float64, 8 more with
    sample weights) whatever the number of
    batches, and other scores take at most 8 bytes per sample for float32 scores (12 for float64) plus
    8 per sample with weights: less than the arrays themselves. :meth:`merge` and pickling serve
    data-parallel evaluation (each process accumulates its share; one merges them all).
    """

    __module__ = "fairmedfm_fast.accumulator"  # its public place, which pickles and reprs name

    def __init__(self, *, pos_label: Any = None, score_type: str = "auto", score_column: int | None = None,
                 bins: _groups.Bins | None = None, intersectional: bool = False,
                 metrics: Sequence[str] | None = None):
        if score_type not in ("auto", "probability", "logit"):
            raise ValueError(f"score_type={score_type!r} is not one of 'auto', 'probability', 'logit'")
        self.pos_label = pos_label
        self.score_type = score_type
        self.score_column = score_column
        self.intersectional = bool(intersectional)
        self.metrics = _metric_registry.check_metrics(metrics)
        self.bins = check_cut_points(bins)
        self.reset()

    def reset(self) -> None:
        """Forget every batch (the options stay)."""
        self._mode: str | None = None if self.score_type == "auto" else self.score_type  # how scores read
        self._matrix: bool | None = None  # whether y_score is (n, k)
        self._column: int | None = self.score_column
        self._score_info: dict[str, Any] = {}
        self._logit_range: tuple[float, float] | None = None  # least and greatest 1-D score read as a logit
        self._weighted: bool | None = None
        self._names: list[str] | None = None  # attribute names, from the first batch
        self._groups: list[dict[str, int]] = []  # per attribute: group name -> id (order of discovery)
        self._numeric: list[bool] = []
        self._categories: list[list[str] | None | bool] = []  # categorical order, None (seen: not one)
        self._cells: dict[tuple[int, ...], int] = {}  # group ids (-1 missing) -> cell
        self._lookups: dict[tuple, Any] = {}  # a batch's group names -> cell of each code combination
        self._labels_seen: list[Any] = []  # distinct values of y_true with pos_label (up to 3)
        self._kinds: list[str | None] = []  # per attribute, the kind of its values (None: not seen yet)
        self._notes: list[str] = []
        self._journal: list[tuple] | None = None  # the rows of the batches added since a segment, if kept
        self._n = 0
        self._dtype = np.dtype(np.float32)
        # the table (distinct rows, sorted) and the rows waiting to join it
        self._scores = np.empty(0, np.float32)
        self._keys = np.empty(0, np.uint32)  # cell * 2 + label
        self._counts: np.ndarray | None = None  # int64; None: every row is one sample
        self._weights: np.ndarray | None = None  # summed sample weights, with sample_weight
        self._waiting: list[tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]] = []
        self._n_waiting = 0  # rows waiting (the uncoded ones too)
        self._uncoded: list[tuple] = []  # batches of text waiting to be coded (scores, labels, weights, columns)
        self._n_uncoded = 0
        self._next = COMPACT_FROM
        self._dense = False  # whether a compaction found more distinct scores than 16 bits hold

    # -- adding batches -------------------------------------------------------------------------

    def update(self, y_true: Any, y_score: Any, sensitive_features: Any, *, sample_weight: Any = None) -> None:
        """Add one batch: anything :func:`fairmedfm_fast.evaluate` takes (lists, NumPy, pandas,
        Arrow, polars, tensors on any device and of any float dtype, logits, (n, k) score
        matrices, class-name labels with ``pos_label``), and optional sample weights.

        A batch that raises changes nothing: how later batches are read (the score type, the groups,
        the kinds of the attributes' values) is what it was before."""
        saved = self._reading_copy()
        try:
            scores, keys, weights, notes = self._read_batch(y_true, y_score, sensitive_features, sample_weight)
        except BaseException:
            self._restore(saved)
            raise
        for note in notes:
            if note not in self._notes:
                self._notes.append(note)
        if scores.dtype != self._dtype:
            if self._n:
                self._promote(np.result_type(scores.dtype, self._dtype))
            else:
                self._dtype = scores.dtype
        scores = scores.astype(self._dtype, copy=False)
        if isinstance(keys, tuple):  # text to be coded later: (labels, columns)
            if self._uncoded and text_form(self._uncoded[0][3]) != text_form(keys[1]):
                self._settle()  # (batches are joined by column: of one form)
            self._uncoded.append((scores, keys[0], weights, keys[1]))
            self._n_uncoded += len(scores)
            self._n += len(scores)
            self._n_waiting += len(scores)
            if self._n_waiting >= max(self._next, len(self._scores)):
                self._compact()
            elif self._n_uncoded >= SETTLE_FROM:
                self._settle()
            return
        if self._journal is not None:
            self._journal.append((scores, keys, weights))
        self._add_rows(scores, keys, weights)

    def _read_batch(self, y_true: Any, y_score: Any, sensitive_features: Any, sample_weight: Any):
        """A batch's scores, keys (cell * 2 + label) and weights, and its notes."""
        notes: list[str] = []
        named = {"y_true": y_true, "y_score": y_score, "sensitive_features": sensitive_features}
        if sample_weight is not None:
            named["sample_weight"] = sample_weight
        paired = _inputs.align_by_index(named, notes)
        weighted = sample_weight is not None
        if self._weighted is not None and weighted != self._weighted:
            raise ValueError("sample_weight was given for some batches and not for others; pass it with every "
                             "batch or with none")
        # tensors (on any device) to NumPy once per batch: the reading below may look at them twice
        y_true, y_score = (_inputs.to_numpy(value, name) if hasattr(value, "detach") else value
                           for value, name in ((paired[0], "y_true"), (paired[1], "y_score")))
        labels = self._read_labels(y_true)
        scores = self._read_scores(y_score, y_true)
        n = len(labels)
        if len(scores) != n:
            raise ValueError(f"y_true has {n} samples but y_score has {len(scores)}; pass one label and one "
                             "score per sample")
        weights = batch_weights(paired[3], n) if weighted else None
        if self._names is not None and self._kinds == ["text"] * len(self._names):
            text = text_columns(paired[2], self._names, n)  # text of the attributes, as the first batch's
            keys = None if text is None or self._journal is None else batch_keys(self, text, labels)
            if keys is not None or text is not None and self._journal is None:  # (journal: rows at once)
                self._weighted = weighted
                self._categories = [None] * len(self._names)  # (what reading them would find)
                return scores, (labels, text) if keys is None else keys, weights, notes
        cells = self._read_cells(paired[2], n)
        self._weighted = weighted
        keys = np.left_shift(cells, 1, dtype=np.uint32, casting="unsafe")  # cells < 2**31: one pass, not two
        keys |= labels
        return scores, keys, weights, notes

    #: What decides how a batch is read, which a batch that raises leaves as it was.
    _READING = ("_mode", "_matrix", "_column", "_score_info", "_logit_range", "_weighted", "_names", "_groups",
                "_numeric", "_categories", "_kinds", "_cells", "_labels_seen")

    def _reading_copy(self) -> tuple:
        """Copies of the fields of :data:`_READING`, in its order (containers copied where a batch changes
        them in place)."""
        return (self._mode, self._matrix, self._column, dict(self._score_info), self._logit_range, self._weighted,
                self._names, [dict(known) for known in self._groups], list(self._numeric), list(self._categories),
                list(self._kinds), dict(self._cells), list(self._labels_seen))

    def _restore(self, saved: tuple) -> None:
        for name, value in zip(self._READING, saved):
            setattr(self, name, value)
        self._lookups = {}  # they may name cells of the rejected batch

    #: ``add`` is the name :class:`~fairmedfm_fast.VoxelAccumulator` first had; both work.
    def add(self, y_true: Any, y_score: Any, sensitive_features: Any, *, sample_weight: Any = None) -> None:
        """Alias of :meth:`update`."""
        self.update(y_true, y_score, sensitive_features, sample_weight=sample_weight)

    def _read_labels(self, y_true: Any) -> np.ndarray:
        if self.pos_label is None:
            return _inputs.binary_labels(y_true)[0]
        raw = _inputs.to_numpy(y_true, "y_true")
        labels = raw.argmax(axis=1) if raw.ndim == 2 and raw.shape[1] > 1 else raw
        if len(labels) == 0:
            raise ValueError("y_true is empty: pass one label per sample")
        labels = labels.reshape(len(labels), -1)
        if labels.shape[1] != 1:
            raise ValueError(f"y_true must hold one label per sample (or one-hot rows), got shape {raw.shape}")
        labels = labels[:, 0]
        if len(self._labels_seen) < 3:
            for value in _inputs.pd.unique(labels).tolist():
                if value not in self._labels_seen:
                    self._labels_seen.append(value)
        return np.asarray(labels == self.pos_label).astype(np.uint8)

    def _read_scores(self, y_score: Any, y_true: Any) -> np.ndarray:
        shape = getattr(y_score, "shape", None)
        matrix = len(shape if shape is not None else np.shape(y_score)) == 2 and (shape or np.shape(y_score))[1] > 1
        if self._matrix is not None and matrix != self._matrix:
            raise ValueError(f"y_score is {'a (n, k) matrix' if matrix else 'one score per sample'} in this batch "
                             "but was not in the first; pass the scores in one form in every batch")
        column = self._column
        if matrix and column is None and self.pos_label is not None:
            column = _inputs.class_column(y_true, y_score, self.pos_label)
            if column is None:
                raise ValueError("score_column: with a (n, k) y_score and pos_label, the first batch must hold every "
                                 "class to tell which column is the positive class; pass score_column= (its "
                                 "position, from 0) to the accumulator")
        mode = self._mode or self.score_type
        try:
            conversion: dict[str, Any] = {}
            scores, info = _inputs.positive_scores(y_score, mode, column, self.pos_label, conversion)
        except ValueError as error:
            if self.score_type == "auto" and self._mode is not None and reads_as_other(y_score, column, self.pos_label):
                raise ValueError(f"the first batch's scores were read as {PLURAL[self._mode]}, and this batch does not "
                                 f"fit: {error}. Pass score_type= to the accumulator so that every batch is read "
                                 "alike") from None
            raise
        if conversion:  # for the warning of result(), as evaluate words it (percentages)
            self._logit_range = widest(self._logit_range, (float(conversion["logits"].min()),
                                                            float(conversion["logits"].max())))
        if matrix and mode == "probability" and self.score_type == "auto" and self._mode is not None:
            require_rows_sum_to_one(y_score)
        if self._matrix is None:  # the first batch settles "auto" and the score column
            self._mode = "logit" if info.get("score_transform") else "probability"
            self._score_info = info
            if matrix:
                self._column = info["score_column"]
        self._matrix = matrix
        return scores + 0.0  # a copy (-0.0 becomes 0.0)

    def _settle(self) -> None:
        """Code the batches of text waiting uncoded, joined, into rows waiting for the table."""
        if not self._uncoded:
            return
        batches, self._uncoded, self._n_uncoded = self._uncoded, [], 0
        keyed = settled_keys(self, batches)  # (Arrow text: by the groups known, without coding it anew)
        if keyed is not None:
            self._waiting.extend((batch[0], keys, batch[2], None) for batch, keys in zip(batches, keyed))
            return
        n = sum(len(batch[0]) for batch in batches)
        cells = self._read_cells(joined_columns([batch[3] for batch in batches], self._names), n)
        keys, start = np.left_shift(cells, 1, dtype=np.uint32, casting="unsafe"), 0
        for scores, labels, weights, _ in batches:  # each batch's rows as they are (joined once, later)
            keys[start:start + len(scores)] |= labels
            self._waiting.append((scores, keys[start:start + len(scores)], weights, None))
            start += len(scores)

    def _promote(self, dtype: np.dtype) -> None:
        self._settle()
        self._dtype = np.dtype(dtype)
        self._scores = self._scores.astype(dtype)
        self._waiting = [(part[0].astype(dtype), *part[1:]) for part in self._waiting]

    def _read_cells(self, sensitive_features: Any, n: int) -> np.ndarray:
        """Each sample's group cell (a combination of the attributes' groups, -1 where missing),
        numbered as cells are first seen."""
        attributes = _groups.encode_attributes(sensitive_features, n, self.bins or None)
        names = [attribute.name for attribute in attributes]
        if self._names is None:
            self._names = names
            self._groups = [{} for _ in names]
            self._categories = [True] * len(names)  # True: no batch seen yet
        elif names != self._names:
            raise ValueError(f"sensitive_features has attributes {names} in this batch but {self._names} in the "
                             "first; pass the same attributes with every batch")
        self._check_kinds(sensitive_features, attributes)
        if not self._n:  # numeric columns (which must not exceed MAX_NUMERIC_GROUPS groups unbinned)
            self._numeric = [self.bins.get(name) is None and numeric
                             for name, numeric in _groups.numeric_columns(sensitive_features)]
        if _inputs.is_pandas(sensitive_features, "DataFrame", "Series"):
            for k, categories in enumerate(categorical_names(sensitive_features, names)):
                seen = self._categories[k]
                if seen is not None:
                    self._categories[k] = categories if seen is True or seen == categories else None
        else:
            self._categories = [None] * len(names)
        # the batch's combination of local codes, in mixed radix (0: missing)
        widths = [attribute.n_groups for attribute in attributes]
        width = math.prod(n_groups + 1 for n_groups in widths)  # combinations (digit 0: missing)
        # the keys in the narrowest integers that hold them (each pass over the batch moves fewer bytes)
        key_type = np.int16 if width <= 1 << 15 else np.int32 if width < 1 << 31 else np.int64
        combined = _groups.combination_keys([a.codes for a in attributes], widths, key_type)
        layout = tuple(tuple(attribute.groups) for attribute in attributes)
        lookup = self._lookups.get(layout)
        if lookup is None:  # a new set of groups in a batch: cells of its combinations as they are met
            for k, attribute in enumerate(attributes):
                known = self._groups[k]
                for group in attribute.groups:
                    known.setdefault(group, len(known))
            lookup = np.full(width, -1, np.int32) if width <= 1 << 20 else {}  # cells < 2**31 (see _cell)
            if len(self._lookups) < 256:
                self._lookups[layout] = lookup
        if isinstance(lookup, dict):  # too many combinations for a table
            present, inverse = np.unique(combined, return_inverse=True)
            cell_of = np.array([self._cell(value, attributes) for value in present.tolist()], np.int64)
            return cell_of[inverse.ravel()]
        cells = _codes.remapped(combined, lookup)
        if cells.min(initial=0) < 0:  # combinations not met before
            for value in np.unique(combined[cells < 0]).tolist():
                lookup[value] = self._cell(value, attributes)
            cells = _codes.remapped(combined, lookup)
        return cells

    def _check_kinds(self, sensitive_features: Any, attributes: list[_groups.Attribute]) -> None:
        """The kind of each attribute's values (bool, integer, float, text) is the first batch's: 1 and
        "1" would be two groups. A batch without a value of an attribute fixes no kind for it."""
        if len(self._kinds) != len(attributes):
            self._kinds = [None] * len(attributes)
        for k, ((_, kind), attribute) in enumerate(zip(_groups.column_kinds(sensitive_features), attributes)):
            if kind is None or attribute.codes.max(initial=-1) < 0:
                continue
            seen = self._kinds[k]
            if seen is None:
                self._kinds[k] = kind
            elif seen != kind:
                raise ValueError(f"sensitive_features[{attribute.name!r}] holds {kind} values in this batch but "
                                 f"{seen} values in the batches before; pass the attribute's values as one kind in "
                                 "every batch (for example all as text, .astype(str))")

    def _cell(self, value: int, attributes: list[_groups.Attribute]) -> int:
        """The cell of a batch's combination ``value`` of local codes (registered when new)."""
        local = _groups.key_codes(value, [attribute.n_groups for attribute in attributes])
        key = tuple(self._groups[k][attribute.groups[code]] if code >= 0 else -1
                    for k, (attribute, code) in enumerate(zip(attributes, local)))
        found = self._cells.setdefault(key, len(self._cells))
        if len(self._cells) >= 1 << 31:
            raise ValueError("sensitive_features: more than 2**31 group combinations; use fewer attributes")
        return found

    def _add_rows(self, scores: np.ndarray, keys: np.ndarray, weights: np.ndarray | None,
                  counts: np.ndarray | None = None) -> None:
        self._waiting.append((scores, keys, weights, counts))
        self._n_waiting += len(scores)
        self._n += len(scores) if counts is None else int(counts.sum())
        if self._n_waiting >= max(self._next, len(self._scores)):
            self._compact()

    def _joined(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """The table and the waiting rows as one table (not merged): scores, keys, counts (None: all
        ones), summed weights."""
        parts = [(self._scores, self._keys, self._weights, self._counts), *self._waiting]
        scores = np.concatenate([part[0] for part in parts])
        keys = np.concatenate([part[1] for part in parts])
        weights = None
        if self._weighted:  # (the table has none while it is empty)
            weights = np.concatenate([np.zeros(0) if part[2] is None else part[2] for part in parts])
        counts = None
        if any(part[3] is not None for part in parts):
            counts = np.concatenate([np.ones(len(part[0]), np.int64) if part[3] is None else part[3]
                                     for part in parts])
        return scores, keys, counts, weights

    def _compact(self) -> None:
        """Merge the waiting rows into the table: sorted by (score, key), one row per distinct pair
        with its count and summed weight."""
        self._settle()
        if not self._waiting:
            return
        scores, keys, counts, weights = self._joined()
        self._waiting, self._n_waiting = [], 0
        rows = len(scores)
        if counts is None and rows > DISTINCT_SCORES and _codes.more_distinct_than(scores, DISTINCT_SCORES):
            self._dense_rows(scores, keys, weights)
            return
        if scores.dtype == np.float32:  # one 64-bit key: the score's bits (non-negative), then the key
            packed = (scores.view(np.uint32).astype(np.uint64) << np.uint64(32)) | keys
            order = np.argsort(packed)
            packed = packed[order]
            starts = np.flatnonzero(np.concatenate(([True], packed[1:] != packed[:-1])))
        else:
            order = np.lexsort((keys, scores))
            s, k = scores[order], keys[order]
            starts = np.flatnonzero(np.concatenate(([True], (s[1:] != s[:-1]) | (k[1:] != k[:-1]))))
        if scores.dtype == np.float32:
            distinct = 1 + int(np.count_nonzero((packed[1:] >> np.uint64(32)) != (packed[:-1] >> np.uint64(32))))
        else:
            distinct = 1 + int(np.count_nonzero(s[1:] != s[:-1])) if rows else 0
        if distinct > DISTINCT_SCORES and counts is None:
            self._dense_rows(scores, keys, weights)
            return
        self._dense = False
        self._scores, self._keys = scores[order[starts]], keys[order[starts]]
        counts = np.ones(rows, np.int64) if counts is None else counts[order]
        self._counts = np.add.reduceat(counts, starts)
        if weights is not None:
            self._weights = np.add.reduceat(weights[order], starts)
        self._next = max(COMPACT_FROM, len(starts))

    def _dense_rows(self, scores: np.ndarray, keys: np.ndarray, weights: np.ndarray | None) -> None:
        """Not 16-bit scores: the rows kept as they came, and no more compactions."""
        self._dense = True
        self._scores, self._keys, self._weights = scores, keys, weights
        self._next = np.inf

    def _flush(self) -> None:
        """The waiting rows into the table: merged with it when it already merges repeated rows
        (16-bit scores: the table stays bounded), else joined as they are (the engine sorts them
        anyway); a pickled state is then one set of arrays."""
        self._settle()
        if not self._waiting:
            return
        if self._counts is not None and not self._dense:
            self._compact()
            return
        self._scores, self._keys, self._counts, self._weights = self._joined()
        self._waiting, self._n_waiting = [], 0

    # -- combining --------------------------------------------------------------------------------

    def merge(self, other: FairnessAccumulator) -> FairnessAccumulator:
        """Add the batches of ``other`` (made with the same options, e.g. in another process and
        received pickled); returns self. The order of merging does not change the result."""
        if not isinstance(other, FairnessAccumulator):
            raise ValueError(f"other must be a FairnessAccumulator, got {type(other).__name__}")
        self._settle()
        other._settle()
        mine = (self.pos_label, self.score_type, self.score_column, self.intersectional, self.metrics, self.bins)
        theirs = (other.pos_label, other.score_type, other.score_column, other.intersectional, other.metrics,
                  other.bins)
        if mine != theirs:
            raise ValueError("other accumulator was made with other options (pos_label, score_type, score_column, "
                             "bins, intersectional, metrics); merge accumulators made alike")
        if other._names is None:
            return self
        if self._names is None:
            self._names = list(other._names)
            self._groups = [{} for _ in other._names]
            self._numeric = [False] * len(other._names)
            self._categories = [True] * len(other._names)
            self._weighted = other._weighted
        if other._names != self._names:
            raise ValueError(f"other accumulator has attributes {other._names}, this one {self._names}; merge "
                             "accumulators of the same attributes")
        if other._weighted != self._weighted and self._n:
            raise ValueError("one accumulator has sample weights and the other not; pass sample_weight to both or "
                             "to neither")
        if self._matrix is not None and other._matrix is not None and (self._mode, self._matrix) != (
                other._mode, other._matrix):
            raise ValueError(f"other accumulator read its scores as {PLURAL[other._mode]}, this one as "
                             f"{PLURAL[self._mode]}; pass "
                             "score_type= to both")
        if self._matrix is None:
            self._mode, self._matrix, self._column = other._mode, other._matrix, other._column
            self._score_info = dict(other._score_info)
        self._weighted = other._weighted
        self._merge_kinds(getattr(other, "_kinds", []))
        self._logit_range = widest(self._logit_range, getattr(other, "_logit_range", None))
        cell_map = self._cells_of(other)
        for value in other._labels_seen:
            if value not in self._labels_seen and len(self._labels_seen) < 3:
                self._labels_seen.append(value)
        for note in other._notes:
            if note not in self._notes:
                self._notes.append(note)
        dtype = np.result_type(self._dtype, other._dtype) if self._n else other._dtype
        if dtype != self._dtype:
            self._promote(dtype)
        for scores, keys, weights, counts in [(other._scores, other._keys, other._weights, other._counts),
                                              *other._waiting]:
            if len(scores):
                mapped = (cell_map[(keys >> np.uint32(1)).astype(np.intp)].astype(np.uint32) << np.uint32(1))
                self._add_rows(scores.astype(self._dtype), mapped | (keys & np.uint32(1)), weights, counts)
        return self

    def _conversion(self) -> dict[str, Any]:
        """What :func:`evaluate` would know of a sigmoid conversion of all the batches' scores, for
        its warning (ties between logits are not counted: the accumulator keeps the probabilities)."""
        span = getattr(self, "_logit_range", None)
        if span is None:
            return {}
        return range_conversion(self.score_type, *span)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_uncoded", [])  # (a state pickled before batches waited uncoded)
        self.__dict__.setdefault("_n_uncoded", 0)

    def __getstate__(self) -> dict:
        self._flush()
        state = self.__dict__.copy()
        state["_lookups"], state["_text"] = {}, None  # made again as batches come
        return state

    # -- the report -------------------------------------------------------------------------------

    @property
    def n_samples(self) -> int:
        """Samples added so far."""
        return self._n

    def result(self, *, threshold: float | None = None, min_group_size: int | None = None, n_boot: int = 0,
               ci: float = 0.95, n_permutations: int = 0, random_state: Any = None,
               stratify: str | None = "attribute", p_adjust: str | None = "holm",
               progress: bool | None = None, interval: str | None = None) -> FairnessReport:
        """The report of :func:`fairmedfm_fast.evaluate` on every batch added (the options as there).

        Point estimates equal ``evaluate``'s on the concatenated batches (counts, AUC and
        thresholds exactly, other values to rounding). Bootstrap intervals and permutation
        p-values are valid but drawn otherwise than ``evaluate``'s (their draws depend on the order
        of the samples); they expand the table to one row per sample, so they take the memory of
        the samples (with sample weights, samples of one score, label and group share their mean
        weight there). ``interval="analytic"`` gives ``evaluate``'s analytic intervals exactly (not
        with sample weights); it reads one row per sample too. ``p_adjust`` is ``"holm"`` by
        default, as in ``evaluate``.
        """
        threshold = check_threshold(threshold)
        min_group_size = check_min_group_size(min_group_size)
        n_boot = check_count(n_boot, "n_boot")
        n_permutations = check_count(n_permutations, "n_permutations")
        _resample.check_options(stratify, p_adjust)
        check_interval(interval, True if self._weighted else None)
        progress = _progress.check(progress)
        if not (isinstance(ci, (float, int)) and 0 < ci < 1):
            raise ValueError(f"ci must be a coverage strictly between 0 and 1, such as 0.95; got {_inputs.shown(ci)}")
        if self._names is None:
            raise ValueError("no batch was added: call update(y_true, y_score, sensitive_features) first")
        self._flush()
        n = self._n
        per_cell, problem = self._cell_attributes()
        extra = _metric_registry.optional_keys(self.metrics)
        counts = self._counts
        scores, labels, attributes, measured = table_rows(self, per_cell, with_default(extra), threshold, problem)
        positives = int(counts[labels == 1].sum()) if counts is not None else int(np.count_nonzero(labels))
        label_info: dict[str, Any] = {}
        if self.pos_label is not None:
            if not positives:
                raise ValueError(f"pos_label={_inputs.shown(self.pos_label)} does not occur in y_true, whose values "
                                 f"include {_inputs.preview(self._labels_seen)}; pass one of those")
            label_info["pos_label"] = self.pos_label.item() if isinstance(self.pos_label, np.generic) else self.pos_label
            if len(self._labels_seen) > 2:
                label_info["one_vs_rest"] = True
        if positives == 0 or positives == n:
            raise ValueError(f"y_true has only label {1 if positives else 0} ({n} samples); fairness metrics need "
                             "both positive and negative samples")
        if self._weighted and not self._weights.any():
            raise ValueError("sample_weight is zero for every sample; at least one sample needs weight")
        if problem:
            raise ValueError(problem)
        check_resampling(attributes, n_boot, n_permutations, _resample.RESAMPLED_PER_GROUP)
        weights = self._weights if self._weighted else None if counts is None else counts.astype(np.float64)
        warnings = list(self._notes)
        metadata = {**label_info, **self._score_info, "n_samples": n}
        warnings.extend(transform_note(metadata, self._conversion()))
        results, overall, arranged, rows = _assess(scores, labels, attributes, weights, counts, warnings,
                                                   with_default(extra), threshold, min_group_size, not self._weighted,
                                                   measured)
        metadata.update(asked(threshold, self._weighted, min_group_size, self.metrics if extra else ()))
        seed = _resample.seed_from(random_state) if n_boot or n_permutations else None
        report, flagged = assemble(results, overall, warnings, metadata, attributes=attributes, settings=dict(
            threshold=threshold, random_state=random_state, seed=seed, n_boot=n_boot, n_permutations=n_permutations,
            ci=ci, stratify=stratify, p_adjust=p_adjust, intersectional=self.intersectional,
            metrics=list(self.metrics or []), n_samples=n), bins=self.bins)
        samples = arranged
        if weights is not None and (n_boot or n_permutations):  # one row per sample
            samples = _expanded(scores, labels, rows, arranged.sizes, counts, weights)
        # the placement values of the analytic intervals count samples: one row per sample, unweighted
        with_uncertainty(report, results, flagged, samples, lambda: arranged if counts is None else _expanded(
                             scores, labels, rows, arranged.sizes, counts, None),
                         n_boot=n_boot, ci=ci, n_permutations=n_permutations, random_state=random_state,
                         threshold=threshold, stratify=stratify, p_adjust=p_adjust, progress=progress,
                         warnings=warnings, extra=extra, seed=seed, interval=interval)
        return report

    def _cell_attributes(self) -> tuple[list[_groups.Attribute], str | None]:
        """The attributes over the cells (codes in report order), and why the report cannot be made
        (an attribute that looks continuous) or None."""
        cell_ids = np.array(list(self._cells), np.int64).reshape(len(self._cells), len(self._names))
        per_cell = []
        for k, name in enumerate(self._names):
            known = self._groups[k]
            names = list(known)
            spec = self.bins.get(name)
            has_missing = bool((cell_ids[:, k] < 0).any())
            categories = self._categories[k] if isinstance(self._categories[k], list) else None
            ordered = _codes.report_order(names, bin_labels=None if spec is None else cut_point_groups(spec, name),
                                           categories=categories, has_missing=has_missing)
            if self._numeric[k] and spec is None and len(ordered) > _groups.MAX_NUMERIC_GROUPS:
                return [], (f"attribute {name!r} looks continuous (more than {_groups.MAX_NUMERIC_GROUPS} distinct "
                            f"numbers over the batches); group it with bins={{{name!r}: [40, 60]}} (cut points)")
            rank = {group: i for i, group in enumerate(ordered)}
            lookup = np.array([*(rank[group] for group in names), -1], np.intp)
            codes = lookup[cell_ids[:, k]]
            per_cell.append(_groups.Attribute(name, _codes.narrowest(codes, len(ordered)), ordered))
        if self.intersectional and len(per_cell) > 1:
            per_cell.append(_groups.combine(per_cell))
        return per_cell, None


def _assess(scores: np.ndarray, labels: np.ndarray, attributes: list[_groups.Attribute], weights, counts,
            warnings: list[str], wanted, threshold, min_group_size, integer: bool, measured=None):
    """:func:`fairmedfm_fast._assess.assess` over the table: each grouping's ``count`` is samples
    (the rows' counts summed) and, without sample weights, the confusion counts are integers.
    ``measured``: the engine's (arranged, groupings) of these rows where the caller has them (no
    code is negative there)."""
    rows = [attribute.codes for attribute in attributes]
    sizes = [attribute.n_groups for attribute in attributes]
    complete = next((k for k, attribute in enumerate(attributes) if attribute.codes.min(initial=0) >= 0), None)
    if complete is None:
        rows.append(np.zeros(len(labels), np.intp))
        sizes.append(1)
        complete = len(rows) - 1
    arranged, groupings = measured or _engine.arrange_and_measure(scores, labels, rows, sizes, weights, wanted,
                                                                  threshold, curves=True)
    n_samples = len(labels) if counts is None else int(counts.sum())
    if weights is not None:
        for grouping, codes, size in zip(groupings, rows, sizes):
            present = codes >= 0
            per = np.bincount(codes[present], None if counts is None else counts[present], minlength=size)
            grouping.count = np.append(per, per.sum()).astype(np.int64)
            if integer:
                for key, values in grouping.values.items():
                    if key.removesuffix(_engine.BEST) in _metric_registry.REGISTRY.integer_names and values.dtype.kind == "f":
                        grouping.values[key] = values.astype(np.int64)
    overall = {key: as_python(values[-1]) for key, values in groupings[complete].values.items()}
    results = [attribute_result(attribute, grouping, n_samples, warnings, min_group_size)
               for attribute, grouping in zip(attributes, groupings)]
    return results, overall, arranged, rows


def _expanded(scores: np.ndarray, labels: np.ndarray, rows: list[np.ndarray], sizes: np.ndarray, counts, weights
              ) -> _engine.Arranged:
    """The table as one row per sample, sorted, for resampling (with sample weights, each sample of a
    row gets the row's mean weight); ``rows`` are the code rows the engine measured."""
    repeats = np.ones(len(scores), np.int64) if counts is None else counts
    each = None
    if weights is not None and counts is not None:
        each = np.repeat(weights / repeats, repeats)
    elif weights is not None:
        each = weights
    if counts is not None:
        rows = [np.repeat(codes, repeats) for codes in rows]
        scores, labels = np.repeat(scores, repeats), np.repeat(labels, repeats)
    return _engine.arrange(scores, labels, rows, sizes.tolist(), each)
