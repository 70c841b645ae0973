"""The metric registry as one object: :data:`REGISTRY`, its tables and the lookups made from them.

Entries are added through :meth:`MetricRegistry.add_metric` and :meth:`MetricRegistry.add_segmentation`
(``register_metric`` and ``register_segmentation_metric`` build and check them) and read through its
attributes; nothing else holds a copy. A change swaps in new tables and lookups at once and clears
the caches registered as derived from them (:meth:`MetricRegistry.derived`). Names are matched
without regard to case and shown as registered.

Registering a name again: the package's own names are protected; a user metric whose entry is the
same (the same code: a plugin imported twice) is left as it is, and one whose function or options
changed (a notebook cell run again after an edit) replaces the old entry, its summary columns and
its sums.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

from .entries import (
    BEST,
    BUILTIN_PER_GROUP,
    BUILTIN_SEGMENTATION,
    BUILTIN_SUMMARIES,
    BUILTIN_SUMS,
    SORTED_PASSES,
    PerGroup,
    PerSample,
    Sum,
    Summary,
    same_entry,
)

#: The Python entry-point group of plugin modules: each entry is loaded (its module imported, which
#: registers its metrics) the first time a metric name is not known, in every process where the
#: plugin is installed.
ENTRY_POINTS = "fairmedfm_fast.metrics"


class MetricRegistry:
    """The classification metrics, their per-slot sums and summary columns, and the segmentation
    metrics: four tables of entries, in report order, and the lookups made from them."""

    def __init__(self, per_group=BUILTIN_PER_GROUP, sums=BUILTIN_SUMS, summaries=BUILTIN_SUMMARIES,
                 segmentation=BUILTIN_SEGMENTATION):
        self._lock = threading.RLock()
        self._clears: list[Callable[[], None]] = []
        #: The user metrics' own summary columns and sums (name -> (columns, sums)), replaced with them.
        self._owned: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.builtin = frozenset(m.name.casefold() for m in per_group)
        self.builtin_segmentation = frozenset(m.name.casefold() for m in segmentation)
        self.plugins_loaded = False
        self._set(tuple(per_group), tuple(sums), tuple(summaries), tuple(segmentation))

    # --- the tables and their lookups ---------------------------------------------------------

    def _set(self, per_group, sums, summaries, segmentation) -> None:
        """Swap in new tables and the lookups made from them; clear the derived caches."""
        self.per_group: tuple[PerGroup, ...] = per_group
        self.sums: tuple[Sum, ...] = sums
        self.summaries: tuple[Summary, ...] = summaries
        self.segmentation: tuple[PerSample, ...] = segmentation
        self.by_name = {metric.name: metric for metric in per_group}
        self.sum = {entry.name: entry for entry in sums}
        self.summary = {entry.column: entry for entry in summaries}
        self.summary_reads = frozenset(key for entry in summaries for key in entry.reads)
        self.threshold_names = frozenset(m.name for m in per_group if m.at_threshold)
        self.optional_names = tuple(m.name for m in per_group if m.optional)
        self.integer_names = frozenset(m.name for m in per_group if m.integer)
        names = [m.name for m in per_group if not m.optional]
        optional = [*self.optional_names, *(n + BEST for n in self.optional_names if n in self.threshold_names)]
        self.key_order = (*names, *(n + BEST for n in names), *optional)
        self._folded = {m.name.casefold(): m.name for m in per_group}
        self._folded_segmentation = {m.name.casefold(): m for m in segmentation}
        for clear in self._clears:
            clear()

    def derived(self, cached):
        """Register the ``functools.lru_cache`` function ``cached`` as derived from the tables: a change
        clears it. Returns it (a decorator)."""
        self.on_change(cached.cache_clear)
        return cached

    def on_change(self, clear: Callable[[], None]) -> None:
        """Call ``clear`` (of a cache made from the tables) at each change of the tables."""
        self._clears.append(clear)

    def canonical(self, name: str) -> str | None:
        """The registered spelling of classification metric ``name`` (any case), or None."""
        return self._folded.get(str(name).casefold())

    def segmentation_name(self, name: str) -> str | None:
        """The registered spelling of segmentation metric ``name`` (any case), or None."""
        entry = self._folded_segmentation.get(str(name).casefold())
        return None if entry is None else entry.name

    def segmentation_metric(self, name: str) -> PerSample | None:
        """The entry of a per-sample segmentation metric (any case) or of its report column (``hd90``
        is HD95 at another percentile)."""
        entry = self._folded_segmentation.get(str(name).casefold())
        if entry is not None:
            return entry
        if name.startswith("hd") and name[2:].replace(".", "", 1).isdigit():
            return self._folded_segmentation["hd95"]
        return None

    def ranked(self, metric: PerGroup) -> bool:
        """Whether the metric's sums need the samples sorted by score (a pass of ``SORTED_PASSES``)."""
        return any(self.sum[need].made_by in SORTED_PASSES for need in metric.sums)

    # --- registration -----------------------------------------------------------------------------

    def add_metric(self, metric: PerGroup, summaries: tuple[Summary, ...], new_sums: tuple[Sum, ...]) -> None:
        """Add a user metric with its summary columns and new sums; the same entry again is a no-op, a
        changed one replaces the old (ValueError for a name of the package's or a column or sum of
        another metric)."""
        with self._lock:
            old_name = self.canonical(metric.name)
            if old_name is not None and (old_name.casefold() in self.builtin or old_name not in self._owned):
                raise ValueError(f"name={metric.name!r} is already a metric; choose another name")
            owned_columns, owned_sums = self._owned.get(old_name, ((), ()))
            taken = [s.column for s in summaries if s.column in self.summary and s.column not in owned_columns]
            if taken:
                raise ValueError(f"summaries: {taken[0]!r} is already a summary column; choose another name")
            for entry in new_sums:
                existing = self.sum.get(entry.name)
                if existing is not None and entry.name not in owned_sums and not same_entry(existing, entry):
                    raise ValueError(f"terms: {entry.name!r} is already a sum; choose another name")
            if old_name is not None and self._unchanged(old_name, metric, summaries, new_sums):
                return
            kept_sums = tuple(s for s in self.sums if s.name not in owned_sums)
            added = tuple(s for s in new_sums if s.name not in {k.name for k in kept_sums})
            self._set(tuple(m for m in self.per_group if m.name != old_name) + (metric,), kept_sums + added,
                      tuple(s for s in self.summaries if s.column not in owned_columns) + summaries,
                      self.segmentation)
            self._owned.pop(old_name, None)
            self._owned[metric.name] = (tuple(s.column for s in summaries), tuple(s.name for s in added))

    def _unchanged(self, name: str, metric: PerGroup, summaries: tuple[Summary, ...],
                   new_sums: tuple[Sum, ...]) -> bool:
        columns, sums = self._owned[name]
        return (name == metric.name and same_entry(self.by_name[name], metric)
                and tuple(self.summary[c] for c in columns) == summaries
                and all(s.name in self.sum and same_entry(self.sum[s.name], s) for s in new_sums)
                and set(sums) <= {s.name for s in new_sums})

    def add_segmentation(self, entry: PerSample) -> None:
        """Add a user segmentation metric: the same entry again is a no-op, a changed one replaces the old
        (ValueError for a name of the package's)."""
        with self._lock:
            old = self._folded_segmentation.get(entry.name.casefold())
            if old is not None and (old.name.casefold() in self.builtin_segmentation or old.from_counts is None):
                raise ValueError(f"name={entry.name!r} is already a segmentation metric; choose another name")
            if old is not None and same_entry(old, entry):
                return
            self._set(self.per_group, self.sums, self.summaries,
                      tuple(m for m in self.segmentation if m is not old) + (entry,))

    # --- plugins and tests ------------------------------------------------------------------------

    def load_plugins(self) -> bool:
        """Import the modules of the :data:`ENTRY_POINTS` group, once per process; whether any was new."""
        if self.plugins_loaded:
            return False
        self.plugins_loaded = True
        from importlib.metadata import entry_points

        found = entry_points(group=ENTRY_POINTS)
        for entry in found:
            try:
                entry.load()
            except Exception as error:  # a broken plugin: say which, not a traceback from inside it
                raise ValueError(f"the {ENTRY_POINTS} plugin {entry.name!r} ({entry.value}) failed to load: "
                                 f"{type(error).__name__}: {error}; fix or uninstall it") from error
        return bool(found)

    def snapshot(self) -> tuple:
        """The registry's state, for :meth:`restore` (tests that register metrics put it back)."""
        return (self.per_group, self.sums, self.summaries, self.segmentation, dict(self._owned),
                self.plugins_loaded)

    def restore(self, state: tuple) -> None:
        with self._lock:
            *tables, owned, self.plugins_loaded = state
            self._owned = dict(owned)
            self._set(*tables)


#: The registry of this process: every module reads the metric tables from it.
REGISTRY = MetricRegistry()
