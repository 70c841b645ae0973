"""What :func:`~fairmedfm_fast.compare_models` returns: :class:`ModelComparison`, each model's report,
the paired differences between models and a leaderboard."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from .._util.lazy_pandas import pd
from .frame import FairnessReport, jsonable


@dataclass
class ModelComparison:
    """Models scored on the same samples, compared.

    Attributes
    ----------
    reports : dict
        Model name -> its :class:`~fairmedfm_fast.FairnessReport` (equal to ``evaluate`` on that model).
    differences : DataFrame
        One row per (model, other, attribute, column): both values, their ``difference`` (model minus
        other) and, where asked for, the paired bootstrap's interval and p-value, the analytic (DeLong)
        standard error, interval and p-value, the swap permutation test's p-value (a test that the two
        models are exchangeable, not that they are equally fair), the p-values adjusted over the
        family of every comparison (``p_adjust``), and ``significant``: the adjusted test rejects *and*
        the interval excludes 0 (None where no test ran or the count of resamples cannot reach the
        adjusted level, or where ``small_group``). ``small_group``: either model's value is defined by a
        group with fewer than 10 positives or negatives (the report's ``small_group_below``; its
        ``gaps["small_group"]``), so the difference is not estimable (``not_estimable`` says which group
        of which model) and never called significant, as the findings never headline such a gap.
    replicates : dict
        (``"model"`` or ``"difference"``, names...) -> the paired bootstrap's replicate values, behind
        the leaderboard's intervals.
    metadata : dict
        The settings, the family of tests and how it was adjusted.
    """

    reports: dict[str, FairnessReport]
    differences: pd.DataFrame
    metadata: dict[str, Any]
    replicates: dict[tuple, Any] = field(default_factory=dict, repr=False)

    def leaderboard(self, column: str = "worst-auc", attribute: str | None = None,
                    higher_is_better: bool | None = None) -> pd.DataFrame:
        """The models ranked by one summary ``column`` of one ``attribute`` (default: the first), best
        first: ``value``, the paired bootstrap interval of the value (when ``n_boot`` was given), and
        ``indistinguishable_from_best``: whether the model's difference from the best is not
        significant (its adjusted test does not reject, or its interval holds 0; None where it was not
        tested, its resamples cannot reach the adjusted level, or a small group defines either value), and
        ``small_group``: the model's value is defined by a small group (not estimable; its rank rests on a
        few samples). ``higher_is_better``
        defaults from the column: gaps and errors are better lower (``-gap``, ``bce``, ``ece``, ``eo``),
        the rest higher."""
        first = next(iter(self.reports.values()))
        attribute = str(first.summary.index[0]) if attribute is None else attribute
        if column not in first.summary.columns:
            raise ValueError(f"column={column!r} is not a summary column; choose one of {list(first.summary.columns)}")
        if attribute not in first.summary.index:
            raise ValueError(f"attribute={attribute!r} is not in the reports; choose one of "
                             f"{list(first.summary.index)}")
        if higher_is_better is None:
            higher_is_better = not (column.endswith("-gap") or column in ("eo",) or column.endswith(("bce", "ece")))
        values = pd.Series({name: report.summary.loc[attribute, column] for name, report in self.reports.items()},
                           dtype="float64")
        order = values.sort_values(ascending=not higher_is_better, na_position="last")
        frame = pd.DataFrame({"value": order})
        draws = {name: self.replicates.get(("model", name, attribute, column)) for name in order.index}
        if all(draw is not None for draw in draws.values()):
            level = self.metadata.get("ci", 0.95)
            lows, highs = zip(*(_percentiles(draws[name], level) for name in order.index))
            frame["ci_low"], frame["ci_high"] = lows, highs
        best = order.index[0]
        frame["rank"] = range(1, len(frame) + 1)
        differs = [False if name == best else self._differs(name, best, attribute, column) for name in order.index]
        frame["indistinguishable_from_best"] = [None if d is None else not d for d in differs]
        frame["small_group"] = [self._small(name, attribute, column) for name in order.index]
        frame.index.name = "model"
        frame.attrs["column"], frame.attrs["attribute"] = column, attribute
        return frame

    @property
    def warnings(self) -> list[str]:
        """The models' reports' warnings, each once (most are the same for every model), then the
        comparison's own notes (``metadata["notes"]``)."""
        seen = dict.fromkeys(warning for report in self.reports.values() for warning in report.warnings)
        return [*seen, *self.metadata.get("notes", ())]

    def _small(self, name: str, attribute: str, column: str) -> bool:
        """Whether a small group defines the model's value of ``column`` (its ``report.gaps`` says so)."""
        gaps = self.reports[name].gaps
        return bool(gaps is not None and (attribute, column) in gaps.index
                    and gaps.loc[(attribute, column), "small_group"])

    def _differs(self, name: str, best: str, attribute: str, column: str) -> bool | None:
        """Whether the difference of the two models is significant (None: not tested, or cannot be)."""
        for key in ((name, best, attribute, column), (best, name, attribute, column)):
            if key in self.differences.index:
                value = self.differences.loc[key, "significant"]
                return None if value is None else bool(value)
        return None

    def plot_forest(self, column: str = "worst-auc", attribute: str | None = None,
                    higher_is_better: bool | None = None):
        """A forest of the models on one summary ``column`` of one ``attribute`` (as :meth:`leaderboard`
        ranks them, best on top): each value with its paired bootstrap interval (when ``n_boot`` was
        given), the best in red, the models not distinguishable from it in blue, the others grey,
        hollow where a small group defines the value.

        Returns
        -------
        matplotlib.figure.Figure
            Save it with ``figure.savefig("forest.png")``. Needs matplotlib (``pip install matplotlib``).
        """
        from .comparison_page import forest_figure

        return forest_figure(self, column, attribute, higher_is_better)

    def to_html(self, path: Any = None, column: str = "worst-auc", attribute: str | None = None, *,
                figures: bool = True, dpi: int = 100) -> str:
        """One self-contained HTML page, findings first as the report's page: which model leads on
        ``column`` of ``attribute`` and which are indistinguishable from it (the test and its adjustment
        named), then the leaderboard, the forest (:meth:`plot_forest`, an inlined PNG; ``figures=False``
        leaves it out), the differences and the settings. Written to ``path`` when given; returned."""
        from pathlib import Path

        from .comparison_page import render_page

        text = render_page(self, column, attribute, dpi, figures)
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text, encoding="utf-8")
        return text

    def to_json(self, path: Any = None) -> str:
        """The differences, each model's summary and the metadata as JSON (NaN as null)."""
        frame = self.differences.reset_index()
        out = {"metadata": self.metadata,
               "differences": [{key: jsonable(value) for key, value in row.items()} for row in frame.to_dict("records")],
               "summaries": {name: {str(a): {c: jsonable(v) for c, v in row.items()}
                                    for a, row in report.summary.to_dict("index").items()}
                             for name, report in self.reports.items()}}
        text = json.dumps(out, indent=2, default=str)
        if path is not None:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        return text

    def __repr__(self) -> str:
        return (f"ModelComparison(models: {', '.join(self.reports)}; {len(self.differences)} differences; "
                f"{self.metadata.get('family', '')})")


def _percentiles(draws, level: float) -> tuple[float, float]:
    import numpy as np

    finite = np.asarray(draws, np.float64)
    finite = finite[np.isfinite(finite)]
    if not len(finite):
        return math.nan, math.nan
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)
