"""FairnessAccumulator: its report equals evaluate on the concatenated batches (counts, AUC and the
confusion counts at the best-F1 threshold exactly, other values to 1e-12), whatever the batching,
the merge order, the weights and the compaction of its table."""
import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairmedfm_fast as fm
from fairmedfm_fast._backends import accumulator, accumulator_text
from fairmedfm_fast._inputs import known_text
from fairmedfm_fast.accumulator import FairnessAccumulator

EXACT = ["n", "auc", "tp@best_f1", "fp@best_f1", "tn@best_f1", "fn@best_f1", "tp", "fp", "tn", "fn"]


def assert_same(report, expected, weighted=False):
    """Point estimates equal: exact columns exactly (without weights), the rest to 1e-12."""
    got, want = report.by_group, expected.by_group
    assert list(got.index) == list(want.index)
    assert list(got.columns) == list(want.columns)
    assert got["skipped"].tolist() == want["skipped"].tolist()
    for column in got.columns.drop("skipped"):
        a, b = got[column].to_numpy(np.float64), want[column].to_numpy(np.float64)
        if column in EXACT and not weighted:
            np.testing.assert_array_equal(a, b, err_msg=column)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=column)
    pd.testing.assert_frame_equal(report.summary, expected.summary, check_exact=False, rtol=1e-12, atol=1e-12)
    assert report.overall.keys() == expected.overall.keys()
    np.testing.assert_allclose(list(report.overall.values()), list(expected.overall.values()), rtol=1e-12,
                               atol=1e-12)
    assert report.metadata == expected.metadata
    assert report.warnings == expected.warnings


def dataset(seed, n, levels=None, weights=False, missing=True):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    scores = rng.random(n) * 0.7 + 0.3 * y
    if levels:  # few distinct scores: many ties, many repeated rows
        scores = np.round(scores * levels) / levels
    race = rng.choice(["a", "b", "c", None] if missing else ["a", "b", "c"], n)
    features = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "race": race})
    w = rng.random(n) * 3 if weights else None
    return y, scores, features, w


def split(n, cuts):
    bounds = [0, *sorted(set(cuts)), n]
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


@pytest.fixture
def small_compaction(monkeypatch):
    """Compactions from 8 waiting rows, so that small tests merge repeated rows many times."""
    monkeypatch.setattr(accumulator, "COMPACT_FROM", 8)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(30, 400), cuts=st.lists(st.integers(1, 399), max_size=8),
       levels=st.sampled_from([None, 4, 20]), weighted=st.booleans(), intersectional=st.booleans(),
       n_parts=st.integers(1, 3), order_seed=st.integers(0, 1000), compact=st.integers(0, 12),
       distinct=st.sampled_from([None, 5]))
def test_equals_evaluate_for_any_batching_and_merge_order(seed, n, cuts, levels, weighted, intersectional, n_parts,
                                                         order_seed, compact, distinct):
    """``compact``: rows waiting before a compaction (0: the default, none at these sizes);
    ``distinct``: distinct scores beyond which the rows are kept as they come (None: the default)."""
    y, scores, features, w = dataset(seed, n, levels, weighted)
    if len(set(y)) < 2:
        return
    batches = split(n, [c for c in cuts if c < n])
    saved = accumulator.COMPACT_FROM, accumulator.DISTINCT_SCORES
    accumulator.COMPACT_FROM = compact or saved[0]
    accumulator.DISTINCT_SCORES = distinct or saved[1]
    try:
        parts = [FairnessAccumulator(intersectional=intersectional) for _ in range(n_parts)]
        for k, (a, b) in enumerate(batches):
            parts[k % n_parts].update(y[a:b], scores[a:b], features.iloc[a:b],
                                      sample_weight=None if w is None else w[a:b])
        order = np.random.default_rng(order_seed).permutation(n_parts)
        merged = FairnessAccumulator(intersectional=intersectional)
        for k in order:
            merged.merge(pickle.loads(pickle.dumps(parts[k])))
        report = merged.result()
    finally:
        accumulator.COMPACT_FROM, accumulator.DISTINCT_SCORES = saved
    expected = fm.evaluate(y, scores, features, sample_weight=w, intersectional=intersectional)
    assert merged.n_samples == n
    assert_same(report, expected, weighted)


def test_repeated_rows_merge_into_counts_and_give_the_same_report(small_compaction):
    y, scores, features, _ = dataset(3, 5000, levels=10)
    acc = FairnessAccumulator()
    for a in range(0, 5000, 250):
        acc.update(y[a:a + 250], scores[a:a + 250], features.iloc[a:a + 250])
    acc._compact()
    # 11 scores x 2 labels x 8 cells at most
    assert acc._counts is not None and len(acc._scores) <= 11 * 2 * 8
    assert int(acc._counts.sum()) == 5000
    assert_same(acc.result(), fm.evaluate(y, scores, features))


def test_bfloat16_scores_stay_bounded_over_many_batches():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    acc = FairnessAccumulator()
    sizes = []
    for _ in range(40):
        y = rng.integers(0, 2, 5000)
        scores = torch.tensor(rng.random(5000) * 0.7 + 0.3 * y, dtype=torch.bfloat16)
        acc.update(y, scores, {"sex": rng.integers(0, 2, 5000)})
        sizes.append(len(acc._scores) + acc._n_waiting)
    # bfloat16 has 16,257 values in [0, 1]: the table stays below values x labels x cells (+ waiting rows)
    assert max(sizes) <= 16257 * 2 * 2 + accumulator.COMPACT_FROM
    assert len(pickle.dumps(acc)) < 16257 * 2 * 2 * 20 + 10_000


def test_options_at_result_time():
    y, scores, features, _ = dataset(5, 3000)
    acc = FairnessAccumulator(metrics=["ap", "brier"])
    for a in range(0, 3000, 700):
        acc.update(y[a:a + 700], scores[a:a + 700], features.iloc[a:a + 700])
    for options in ({"threshold": 0.4}, {"min_group_size": 900}):
        expected = fm.evaluate(y, scores, features, metrics=["ap", "brier"], **options)
        assert_same(acc.result(**options), expected)


def test_intervals_and_p_values_are_valid(small_compaction):
    y, scores, features, w = dataset(6, 2000, levels=30, weights=True)
    acc = FairnessAccumulator()
    for a in range(0, 2000, 300):
        acc.update(y[a:a + 300], scores[a:a + 300], features.iloc[a:a + 300], sample_weight=w[a:a + 300])
    options = {"n_boot": 30, "n_permutations": 30, "random_state": 0, "p_adjust": "holm"}
    report = acc.result(**options)
    expected = fm.evaluate(y, scores, features, sample_weight=w, **options)  # the same settings recorded
    assert_same(report, expected, weighted=True)
    bounds = report.ci["summary"]
    for attribute in ("sex", "race"):
        lo, hi = bounds.loc[attribute, "auc-gap_lo"], bounds.loc[attribute, "auc-gap_hi"]
        assert lo <= hi and 0 <= lo and hi <= 1
    assert report.p_values.shape[0] == 2
    assert ((report.p_values > 0) & (report.p_values <= 1)).all().all()


def test_unmerged_samples_give_evaluates_intervals():
    """Rows kept as they came are evaluate's samples in evaluate's order: the same draws, the same
    intervals and p-values; every attribute with missing values (the overall slot of its own)."""
    y, scores, features, _ = dataset(7, 1500)
    features.loc[::7, "sex"] = None
    acc = FairnessAccumulator()
    for a in range(0, 1500, 400):
        acc.update(y[a:a + 400], scores[a:a + 400], features.iloc[a:a + 400])
    got = acc.result(n_boot=20, n_permutations=20, random_state=1)
    want = fm.evaluate(y, scores, features, n_boot=20, n_permutations=20, random_state=1)
    assert_same(got, want)
    pd.testing.assert_frame_equal(got.ci["summary"], want.ci["summary"])
    pd.testing.assert_frame_equal(got.ci["by_group"], want.ci["by_group"])
    pd.testing.assert_frame_equal(got.p_values, want.p_values)


def test_merged_rows_resample_every_sample(small_compaction):
    y, scores, features, _ = dataset(8, 1500, levels=20)
    features.loc[::7, "sex"] = None
    acc = FairnessAccumulator()
    for a in range(0, 1500, 400):
        acc.update(y[a:a + 400], scores[a:a + 400], features.iloc[a:a + 400])
    got = acc.result(n_boot=40, random_state=2)
    assert acc._counts is not None
    want = fm.evaluate(y, scores, features, n_boot=40, random_state=2)
    assert got.ci["summary"].shape == want.ci["summary"].shape
    # valid intervals around the estimate, about as wide as evaluate's
    for attribute in ("sex", "race"):
        lo, hi = got.ci["summary"].loc[attribute, "auc-gap_lo"], got.ci["summary"].loc[attribute, "auc-gap_hi"]
        assert lo <= got.summary.loc[attribute, "auc-gap"] <= hi or hi - lo < 0.2
        width = want.ci["summary"].loc[attribute, "auc-gap_hi"] - want.ci["summary"].loc[attribute, "auc-gap_lo"]
        assert 0.5 * width < hi - lo < 2 * width


def test_reads_logits_matrices_and_class_names_like_evaluate():
    rng = np.random.default_rng(8)
    n = 1200
    classes = rng.choice(["cat", "dog", "eel"], n)
    logits = rng.normal(size=(n, 3)) + (classes[:, None] == np.array(["cat", "dog", "eel"])) * 1.5
    site = rng.integers(0, 3, n)
    acc = FairnessAccumulator(pos_label="dog")
    for a in range(0, n, 400):
        acc.update(classes[a:a + 400], logits[a:a + 400], {"site": site[a:a + 400]})
    assert_same(acc.result(), fm.evaluate(classes, logits, {"site": site}, pos_label="dog"))
    one = rng.normal(size=n)
    acc = FairnessAccumulator(score_type="logit")
    for a in range(0, n, 400):
        acc.update(site[a:a + 400] == 1, one[a:a + 400], {"site": site[a:a + 400]})
    assert_same(acc.result(), fm.evaluate(site == 1, one, {"site": site}, score_type="logit"))


def test_binned_attribute_keeps_the_cut_point_order():
    rng = np.random.default_rng(9)
    n = 2000
    age = rng.integers(18, 90, n).astype(float)
    y = rng.integers(0, 2, n)
    scores = rng.random(n)
    acc = FairnessAccumulator(bins={"age": [40, 60]})
    for a in range(0, n, 150):
        acc.update(y[a:a + 150], scores[a:a + 150], {"age": age[a:a + 150]})
    report = acc.result()
    assert_same(report, fm.evaluate(y, scores, {"age": age}, bins={"age": [40, 60]}))
    assert list(report.by_group.loc["age"].index) == ["<40", "40-60", ">=60"]


def test_clear_errors():
    with pytest.raises(ValueError, match="quantile groups need every value"):
        FairnessAccumulator(bins={"age": 4})
    with pytest.raises(ValueError, match="no batch was added"):
        FairnessAccumulator().result()
    acc = FairnessAccumulator()
    acc.update([0, 1, 1], [0.2, 0.5, 0.9], ["a", "b", "a"])
    with pytest.raises(ValueError, match="score_type="):
        acc.update([0, 1], [-2.0, 3.0], ["a", "b"])
    with pytest.raises(ValueError, match="sample_weight was given for some batches"):
        acc.update([0, 1], [0.1, 0.3], ["a", "b"], sample_weight=[1, 2])
    with pytest.raises(ValueError, match="attributes"):
        acc.update([0, 1], [0.1, 0.3], {"other": ["a", "b"]})
    zero = FairnessAccumulator()
    zero.update([0, 1], [0.1, 0.3], ["a", "b"], sample_weight=[0, 0])  # one batch may weigh nothing
    with pytest.raises(ValueError, match="zero for every sample"):
        zero.result()
    only = FairnessAccumulator()
    only.update([1, 1], [0.2, 0.4], ["a", "b"])
    with pytest.raises(ValueError, match="only label 1"):
        only.result()
    with pytest.raises(ValueError, match="made with other options"):
        FairnessAccumulator(intersectional=True).merge(acc)
    # a numeric attribute that turns continuous over the batches
    wide = FairnessAccumulator()
    for start in range(0, 30, 10):
        wide.update(np.arange(10) % 2, np.linspace(0, 1, 10), {"age": np.arange(start, start + 10)})
    with pytest.raises(ValueError, match="looks continuous"):
        wide.result()


def test_reset_and_add_alias():
    y, scores, features, _ = dataset(11, 600)
    acc = FairnessAccumulator()
    acc.add(y, scores, features)
    acc.reset()
    assert acc.n_samples == 0
    acc.add(y, scores, features)
    assert_same(acc.result(), fm.evaluate(y, scores, features))


def test_voxel_accumulator_update_is_add():
    assert fm.VoxelAccumulator.update.__doc__ and hasattr(fm.VoxelAccumulator, "add")


def test_scalars_are_a_flat_dict_of_floats():
    y, scores, features, _ = dataset(12, 800, missing=False)
    report = fm.evaluate(y, scores, features, n_permutations=10, random_state=0)
    flat = report.scalars()
    assert flat["auc_gap/race"] == report.summary.loc["race", "auc-gap"]
    assert flat["worst_auc/sex"] == report.summary.loc["sex", "worst-auc"]
    assert flat["n/sex"] == 800.0
    assert flat["p_auc-gap/sex".replace("-", "_")] == report.p_values.loc["sex", "auc-gap"]
    assert all(isinstance(value, float) for value in flat.values())


def test_categorical_columns_keep_the_category_order():
    rng = np.random.default_rng(13)
    n = 900
    sizes = pd.Categorical(rng.choice(["small", "medium", "large"], n), categories=["small", "medium", "large"])
    frame = pd.DataFrame({"size": sizes, "sex": rng.choice(["F", "M"], n)})
    y, scores = rng.integers(0, 2, n), rng.random(n)
    acc = FairnessAccumulator()
    for a in range(0, n, 200):
        acc.update(y[a:a + 200], scores[a:a + 200], frame.iloc[a:a + 200])
    report = acc.result()
    assert_same(report, fm.evaluate(y, scores, frame))
    assert list(report.by_group.loc["size"].index) == ["small", "medium", "large"]


def test_curves_of_the_report_are_those_of_evaluate(small_compaction):
    from fairmedfm_fast._report.pictures import classification_curves

    y, scores, features, _ = dataset(14, 3000, levels=25)
    acc = FairnessAccumulator()
    for a in range(0, 3000, 500):
        acc.update(y[a:a + 500], scores[a:a + 500], features.iloc[a:a + 500])
    got, want = classification_curves(acc.result()), classification_curves(fm.evaluate(y, scores, features))
    assert acc._counts is not None and len(got) == len(want) == 2
    for mine, theirs in zip(got, want):
        assert mine.threshold == theirs.threshold
        for a, b in zip([mine.overall, *mine.groups], [theirs.overall, *theirs.groups]):
            assert (a.name, a.n, a.operating_point) == (b.name, b.n, b.operating_point)
            assert a.auc == b.auc
            for field in ("fpr", "tpr", "thresholds", "bin_score", "bin_positive", "bin_weight"):
                np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=1e-12, err_msg=field)
            assert a.ece == pytest.approx(b.ece, rel=1e-12, abs=1e-12)


def test_other_containers_and_any_report_scalars():
    pa = pytest.importorskip("pyarrow")
    y, scores, features, _ = dataset(15, 1000, missing=False)
    acc = FairnessAccumulator()
    for a in range(0, 1000, 250):
        acc.update(pd.Series(y[a:a + 250]), pa.array(scores[a:a + 250]),
                   pa.table({"sex": features["sex"].to_numpy()[a:a + 250], "race": features["race"].to_numpy()[a:a + 250]}))
    assert_same(acc.result(), fm.evaluate(y, scores, features))
    dice = np.random.default_rng(0).random(40)
    seg = fm.evaluate_segmentation({"sex": ["F", "M"] * 20}, dice=dice)
    flat = seg.scalars()
    assert flat and all(isinstance(v, float) for v in flat.values())
    assert flat["n/sex"] == 40.0


def test_a_rejected_batch_changes_nothing_and_a_change_of_kind_is_refused():
    rng = np.random.default_rng(5)
    y, scores = rng.integers(0, 2, 600), rng.random(600)
    sex = rng.choice(["F", "M"], 600)
    accumulator = FairnessAccumulator()
    with pytest.raises(ValueError, match="y_true has 299 samples but y_score has 300"):
        accumulator.update(y[:299], scores[:300] * 10 - 5, {"sex": np.array(["X"] * 300)})  # logits, new group
    assert accumulator.n_samples == 0
    accumulator.update(y[:300], scores[:300], {"sex": sex[:300]})
    with pytest.raises(ValueError, match=r"sensitive_features\['sex'\] holds integer values in this batch but text"):
        accumulator.update(y[300:], scores[300:], {"sex": (sex[300:] == "F").astype(int)})
    accumulator.update(y[300:], scores[300:], {"sex": sex[300:]})
    report = accumulator.result()
    expected = fm.evaluate(y, scores, {"sex": sex})
    pd.testing.assert_frame_equal(report.summary, expected.summary, rtol=1e-12)
    assert list(report.by_group.loc["sex"].index) == ["F", "M"]  # no group "X" from the rejected batch


TEXT_FORMS = {
    "pandas str": lambda columns: pd.DataFrame(columns),
    "string[pyarrow]": lambda columns: pd.DataFrame({k: pd.array(v, dtype="string[pyarrow]")
                                                     for k, v in columns.items()}),
    "pyarrow arrays": lambda columns: {k: __import__("pyarrow").array(v) for k, v in columns.items()},
    "pyarrow large_string": lambda columns: {k: __import__("pyarrow").array(v, __import__("pyarrow").large_string())
                                             for k, v in columns.items()},
    "U arrays": lambda columns: dict(columns),
}


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(40, 400), cuts=st.lists(st.integers(1, 399), max_size=10),
       forms=st.lists(st.sampled_from(sorted(TEXT_FORMS)), min_size=1, max_size=4), settle=st.sampled_from([0, 50]),
       compact=st.sampled_from([0, 60]), weighted=st.booleans(), intersectional=st.booleans(),
       wide=st.integers(0, 11), pickled=st.integers(0, 11), merged=st.booleans(), journal=st.booleans(),
       threads=st.sampled_from([0, 100]), keyed=st.booleans())
def test_text_batches_coded_together_equal_evaluate(seed, n, cuts, forms, settle, compact, weighted, intersectional,
                                                   wide, pickled, merged, journal, threads, keyed):
    # batches of text without missing values wait uncoded and are coded together (when enough wait, at a
    # compaction, a pickle, a merge, a change of form or of the scores' type, and for the report); Arrow
    # text by the tables of the groups known (`keyed`: whatever the batches' sizes), side by side on threads
    # (from `threads` samples), or one by one as they come under a journal (the torch metric's): the report
    # is evaluate's on the concatenated batches, whatever the forms and the moments of coding
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    scores = (rng.random(n) * 0.7 + 0.3 * y).astype(np.float32)
    columns = {"sex": rng.choice(["F", "M", "", "é"], n), "site": rng.choice(["A", "B  ", "B", "hospital 12"], n)}
    w = rng.random(n) * 3 if weighted else None
    batches = split(n, [c for c in cuts if c < n])
    saved = accumulator.COMPACT_FROM, accumulator.SETTLE_FROM, known_text.THREADS_FROM, accumulator_text.KEYED_FROM
    accumulator.COMPACT_FROM, accumulator.SETTLE_FROM = compact or saved[0], settle or saved[1]
    known_text.THREADS_FROM, accumulator_text.KEYED_FROM = threads or saved[2], 1 if keyed else saved[3]
    try:
        acc, other = FairnessAccumulator(intersectional=intersectional), None
        if journal:
            acc.keep_journal()
        for k, (a, b) in enumerate(batches):
            part = {name: values[a:b] for name, values in columns.items()}
            batch_scores = scores[a:b].astype(np.float64) if k == wide else scores[a:b]  # a wider type: promoted
            target = other if merged and k % 2 else acc
            if target is None:
                target = other = FairnessAccumulator(intersectional=intersectional)
            target.update(y[a:b], batch_scores, TEXT_FORMS[forms[k % len(forms)]](part),
                          sample_weight=None if w is None else w[a:b])
            if k == pickled:
                acc = pickle.loads(pickle.dumps(acc))
        if other is not None:
            acc.merge(other)
        report = acc.result()
    finally:
        (accumulator.COMPACT_FROM, accumulator.SETTLE_FROM, known_text.THREADS_FROM,
         accumulator_text.KEYED_FROM) = saved
    if len(set(y)) < 2:
        return
    wide_scores = scores.astype(np.float64) if wide < len(batches) else scores
    expected = fm.evaluate(y, wide_scores, columns, sample_weight=w, intersectional=intersectional)
    assert acc.n_samples == n
    assert_same(report, expected, weighted)


def test_text_batches_after_a_categorical_one_and_a_rejected_batch():
    # uncoded batches of plain text after a categorical first batch drop its category order, as a
    # concatenation does; a batch that raises after uncoded ones leaves them as they were
    rng = np.random.default_rng(8)
    y, scores = rng.integers(0, 2, 900), rng.random(900)
    sex = rng.choice(["M", "F"], 900)
    acc = FairnessAccumulator()
    acc.update(y[:300], scores[:300], pd.DataFrame({"sex": pd.Categorical(sex[:300], categories=["M", "F"])}))
    acc.update(y[300:600], scores[300:600], pd.DataFrame({"sex": sex[300:600]}))
    assert acc._uncoded  # waiting uncoded
    with pytest.raises(ValueError, match=r"sensitive_features\['sex'\] holds integer values in this batch but text"):
        acc.update(y[600:], scores[600:], {"sex": (sex[600:] == "F").astype(int)})
    acc.update(y[600:], scores[600:], {"sex": sex[600:]})
    assert acc.n_samples == 900
    report = acc.result()
    expected = fm.evaluate(y, scores, {"sex": sex})
    assert list(report.by_group.loc["sex"].index) == ["F", "M"]
    assert_same(report, expected)


def test_many_groups_and_intersections_read_back_from_the_keys():
    # rows read back from the keys in one pass where every attribute's codes are int8, else by gathers:
    # 200 sites (int16 codes), and the intersection of 60 sites and sex (up to 120 cells)
    rng = np.random.default_rng(9)
    y, scores = rng.integers(0, 2, 4000), rng.random(4000)
    for n_sites, intersectional in ((200, False), (60, True)):
        columns = {"site": np.array([f"s{i}" for i in range(n_sites)])[rng.integers(0, n_sites, 4000)],
                   "sex": rng.choice(["F", "M"], 4000)}
        acc = FairnessAccumulator(intersectional=intersectional)
        for a in range(0, 4000, 500):
            acc.update(y[a:a + 500], scores[a:a + 500], {k: v[a:a + 500] for k, v in columns.items()})
        assert_same(acc.result(), fm.evaluate(y, scores, columns, intersectional=intersectional))


def test_a_state_pickled_before_uncoded_batches_still_takes_batches():
    # a state without the fields of the uncoded batches (pickled by an earlier version) reads on
    rng = np.random.default_rng(10)
    y, scores, sex = rng.integers(0, 2, 900), rng.random(900), rng.choice(["F", "M"], 900)
    acc = FairnessAccumulator()
    acc.update(y[:300], scores[:300], {"sex": sex[:300]})
    state = acc.__getstate__()
    del state["_uncoded"], state["_n_uncoded"]
    restored = FairnessAccumulator.__new__(FairnessAccumulator)
    restored.__setstate__(state)
    for a in (300, 600):
        restored.update(y[a:a + 300], scores[a:a + 300], {"sex": sex[a:a + 300]})
    assert_same(restored.result(), fm.evaluate(y, scores, {"sex": sex}))


@pytest.mark.parametrize("most", [known_text.MOST_COMBINATIONS, 32])
def test_arrow_text_keyed_by_the_groups_known(monkeypatch, most):
    # batches of Arrow text keyed by tables of the groups known: new names in later batches (the tables
    # and the combinations' place values grow mid-batch), long and non-ASCII names, a rejected batch, a
    # merge of an accumulator that met the groups in another order, a pickle; with room for 32
    # combinations only, the tables give way to the usual coding. The report is evaluate's.
    import pyarrow as pa

    monkeypatch.setattr(known_text, "MOST_COMBINATIONS", most)
    monkeypatch.setattr(known_text, "THREADS_FROM", 500)
    monkeypatch.setattr(accumulator_text, "KEYED_FROM", 100)
    rng = np.random.default_rng(11)
    n = 6000
    names = np.array([f"site {i}" if i % 3 else f"hôpital numéro {i}" for i in range(60)])
    site = names[np.minimum(rng.integers(0, 60, n), np.arange(n) // 50)]  # names appear as batches come
    sex = rng.choice(["F", "M", ""], n)
    y, scores = rng.integers(0, 2, n), rng.random(n).astype(np.float32)
    acc, other = FairnessAccumulator(), FairnessAccumulator()
    for k, a in enumerate(range(0, n, 400)):
        b = a + 400
        batch = {"site": pa.array(site[a:b]), "sex": pa.array(sex[a:b], pa.large_string())}
        (other if k % 4 == 3 else acc).update(y[a:b], scores[a:b], batch)
        if k == 5:
            with pytest.raises(ValueError, match="sensitive_features"):
                acc.update(y[a:b], scores[a:b], {"site": pa.array(["new"] * 400), "sex": pa.array(sex[a:a + 399])})
        if k == 8:
            acc = pickle.loads(pickle.dumps(acc))
    acc.merge(other)
    assert_same(acc.result(), fm.evaluate(y, scores, {"site": site, "sex": sex}))
    assert acc._text.usable == (most > 32)


def test_keys_of_known_text_name_the_rows_groups():
    # a slow reference: each key is the cell of its row's names (in the accumulator's numbering) and its label
    import pyarrow as pa

    rng = np.random.default_rng(12)
    groups, cells = [{}, {}], {}
    tables = known_text.KnownText(groups, cells)
    for size in (5, 300, 40):
        a = rng.choice(["x", "", "long name over eight", "ü", "y "], size)
        b = rng.choice([f"g{i}" for i in range(30)], size)
        labels = rng.integers(0, 2, size).astype(np.uint8)
        keys = tables.keys([pa.array(a), pa.array(b)], labels)
        cell_names = {cell: (list(groups[0])[ids[0]], list(groups[1])[ids[1]]) for ids, cell in cells.items()}
        assert [cell_names[int(key) >> 1] for key in keys] == list(zip(a, b))
        np.testing.assert_array_equal(keys & 1, labels)


@pytest.mark.parametrize("dtype, intersectional, missing", [(np.float32, False, False), (np.float64, True, False),
                                                            (np.float32, True, True)])
def test_a_large_table_is_sorted_by_its_keys_as_evaluate_sorts_its_samples(monkeypatch, dtype, intersectional,
                                                                           missing):
    """From the radix sort's size on, the report's one sort reads each row's codes by its cell (no label
    and code rows first) where no code is missing: evaluate's report, intervals and p-values (the
    same sorted samples), as splitting the keys gives them."""
    from fairmedfm_fast._engine import sorting as engine_sorting

    n = engine_sorting.RADIX_FROM + 3001
    y, scores, features, _ = dataset(13, n, missing=missing)
    scores = np.round(scores, 4).astype(dtype)  # ties; a row per sample (fewer than a compaction waits for)
    real, used = accumulator_text._engine.keyed_and_measured, []
    monkeypatch.setattr(accumulator_text._engine, "keyed_and_measured",
                        lambda *a, **k: used.append(real(*a, **k)) or used[-1])
    acc = FairnessAccumulator(intersectional=intersectional)
    for a in range(0, n, 4000):
        acc.update(y[a:a + 4000], scores[a:a + 4000], features.iloc[a:a + 4000])
    options = dict(n_boot=20, n_permutations=20, random_state=1)
    got = acc.result(**options)
    assert [result is not None for result in used] == [not missing]
    want = fm.evaluate(y, scores, features, intersectional=intersectional, **options)
    monkeypatch.setattr(accumulator_text._engine, "keyed_and_measured", lambda *a, **k: None)
    split_keys = acc.result(**options)
    for other in (want, split_keys):
        assert_same(got, other)
        pd.testing.assert_frame_equal(got.ci["by_group"], other.ci["by_group"])
        pd.testing.assert_frame_equal(got.p_values, other.p_values)
