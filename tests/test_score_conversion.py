"""Scores read as logits: percentages, logits that the sigmoid ties, and the Python warning (issue 28)."""
from __future__ import annotations

import warnings

import fairmedfm
import numpy as np
import pandas as pd
import pytest
from compare import without_extras

import fairmedfm_fast as fm
from fairmedfm_fast import cli
from fairmedfm_fast._inputs import arrays as _inputs

RNG = np.random.default_rng(28)
N = 600
Y = RNG.integers(0, 2, N)
Y[:2] = [0, 1]
P = np.clip(0.3 * Y + 0.7 * RNG.random(N), 0, 1)
G = np.array(["a", "b", "c"])[RNG.integers(0, 3, N)]


def _evaluate(*args, **kwargs):
    """The report and the UserWarnings of ``fm.evaluate``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = fm.evaluate(*args, **kwargs)
    return report, [w for w in caught if issubclass(w.category, UserWarning)]


def _same_numbers(ours, theirs):
    pd.testing.assert_frame_equal(ours.summary, theirs.summary, rtol=1e-9, atol=1e-9)
    pd.testing.assert_frame_equal(without_extras(ours.by_group, theirs.by_group), theirs.by_group, rtol=1e-9, atol=1e-9)
    assert ours.overall == pytest.approx(theirs.overall, rel=1e-9, abs=1e-9)
    assert len(ours.warnings) == len(theirs.warnings)  # the note is one message, as fairmedfm's


def _brute_force_ties(logits):
    """Samples whose probability equals that of a sample with another logit (a plain loop)."""
    probabilities = 1 / (1 + np.exp(-logits.astype(np.float64)))
    by_probability = {}
    for logit, probability in zip(logits.tolist(), probabilities.tolist()):
        by_probability.setdefault(probability, []).append(logit)
    return sum(len(members) for members in by_probability.values() if len(set(members)) > 1)


def _pairwise_auc(scores, labels):
    positive, negative = scores[labels == 1], scores[labels == 0]
    greater = (positive[:, None] > negative[None, :]).sum() + 0.5 * (positive[:, None] == negative[None, :]).sum()
    return greater / (len(positive) * len(negative))


def test_percentages_keep_the_oracle_numbers_and_say_what_they_look_like():
    percent = P * 100
    report, caught = _evaluate(Y, percent, G)
    _same_numbers(report, fairmedfm.evaluate(Y, percent, G))
    (note,) = [message for message in report.warnings if "sigmoid" in message]
    assert "percentages" in note and "divide the scores by 100" in note and "score_type='logit'" in note
    # score_type='probability' is not suggested: it would fail on these scores
    assert "score_type='probability'" not in note
    tied = _brute_force_ties(percent)
    assert tied > 100 and f"made {tied} samples" in note
    assert f"{_pairwise_auc(percent, Y):.6g}" in note
    assert [str(w.message) for w in caught] == [note]


def test_percentages_with_score_type_probability_say_divide_by_100():
    with pytest.raises(ValueError, match="percentages") as info:
        fm.evaluate(Y, P * 100, G, score_type="probability")
    assert "divide the scores by 100" in str(info.value) and "or 'auto' for logits" not in str(info.value)
    with pytest.raises(ValueError, match="score_type='logit' or 'auto'"):  # not percentages: as before
        fm.evaluate(Y, P * 100 - 1, G, score_type="probability")


def test_percentages_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "scores.csv"
    pd.DataFrame({"label": Y, "prob": P * 100, "sex": G}).to_csv(path, index=False)
    assert cli.main(["score", str(path), "--sensitive", "sex", "--format", "json"]) is None
    err = capsys.readouterr().err
    assert "percentages" in err and "divide the scores by 100" in err and "--score-type logit" in err
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["score", str(path), "--sensitive", "sex", "--score-type", "probability"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.splitlines()) == 1
    assert "percentages" in err and "divide the scores by 100" in err and "--score-type logit" in err


def test_explicit_logits_are_not_called_percentages():
    report, _ = _evaluate(Y, P * 100, G, score_type="logit")
    (note,) = [message for message in report.warnings if "sigmoid" in message]
    assert "percentages" not in note and "score_type='logit'" in note


def test_large_logits_tied_by_the_sigmoid_keep_the_oracle_auc_and_give_the_exact_one():
    rng = np.random.default_rng(3)
    logits = (12 * Y + rng.normal(0, 12, N)).astype(np.float32)  # float32, as models give them
    report, caught = _evaluate(Y, logits, G)
    theirs = fairmedfm.evaluate(Y, logits, G)
    _same_numbers(report, theirs)
    exact = _pairwise_auc(logits.astype(np.float64), Y)
    assert report.overall["auc"] != pytest.approx(exact, abs=1e-6)  # the ties change the AUC
    (note,) = [str(w.message) for w in caught]
    assert f"made {_brute_force_ties(logits)} samples" in note and f"{exact:.6g}" in note
    assert note in report.warnings and "percentages" not in note


def test_moderate_logits_say_nothing_about_ties():
    logits = np.log(P + 1e-3) - np.log(1 - P + 1e-3)
    report, caught = _evaluate(Y, logits, G)
    (note,) = [str(w.message) for w in caught]
    assert "count them as ties" not in note and "percentages" not in note and note in report.warnings


@pytest.mark.parametrize("weights", [None, "random"])
def test_sigmoid_ties_against_brute_force(weights):
    rng = np.random.default_rng(5)
    logits = np.concatenate([rng.normal(0, 20, 300), [40.0, 41.0, 41.0, 50.0, -3.0, -3.0]])
    labels = rng.integers(0, 2, len(logits))
    w = None if weights is None else rng.random(len(logits))
    tied, auc = _inputs.sigmoid_ties(logits, labels, w)
    assert tied == _brute_force_ties(logits)
    if w is None:
        assert auc == pytest.approx(_pairwise_auc(logits, labels), rel=1e-12)
    else:
        positive, negative = labels == 1, labels == 0
        pair_weights = w[positive][:, None] * w[negative][None, :]
        order = (logits[positive][:, None] > logits[negative][None, :]) + 0.5 * (
            logits[positive][:, None] == logits[negative][None, :])
        assert auc == pytest.approx((pair_weights * order).sum() / pair_weights.sum(), rel=1e-12)
    assert _inputs.sigmoid_ties(np.array([-1.0, 0.5, 2.0]), np.array([0, 1, 1]), None)[0] == 0


def test_evaluate_issues_the_logit_note_as_a_user_warning():
    logits = np.log(P + 1e-3) - np.log(1 - P + 1e-3)
    with pytest.warns(UserWarning, match="read as logits") as record:
        report = fm.evaluate(Y, logits, G)
    assert record[0].filename == __file__  # pointed at the caller
    assert str(record[0].message) in report.warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # probabilities: no warning
        fm.evaluate(Y, P, G)


def test_logits_asked_for_give_no_user_warning_but_a_note():
    """score_type="logit" was the caller's choice: no UserWarning (fairmedfm 0.4.2's evaluate gives none),
    the note stays in report.warnings; detection (score_type="auto") still warns, and the one-number
    functions keep their warnings."""
    logits = np.log(P + 1e-3) - np.log(1 - P + 1e-3)
    report, caught = _evaluate(Y, logits, G, score_type="logit")
    assert caught == []
    (note,) = [message for message in report.warnings if "sigmoid" in message]
    assert "score_type='logit'" in note
    multiclass = np.stack([-logits, logits], axis=1)  # two columns of logits: a softmax, asked for too
    report, caught = _evaluate(Y, multiclass, G, score_type="logit", score_column=1)
    assert caught == [] and any("logits" in message for message in report.warnings)
    report, caught = _evaluate(Y, logits, G)  # detected
    assert [str(w.message) for w in caught] == [m for m in report.warnings if "read as logits" in m]
    with pytest.warns(UserWarning, match="logit"):
        fm.auc_gap(Y, logits, sensitive_features=G)  # a one-number function keeps its warning


def test_dask_score_type_probability_on_percentages_says_divide_by_100():
    pytest.importorskip("dask")
    from types import SimpleNamespace

    from fairmedfm_fast._backends import dask_survey as fdask

    survey = {"score_nan": 0, "score_low": 0.0, "score_high": 87.5, "score_dtype": np.dtype(np.float64)}
    with pytest.raises(ValueError, match="percentages") as info:
        fdask.score_decision([survey], SimpleNamespace(score="prob"), "probability")
    assert "'prob'" in str(info.value) and "divide the scores by 100" in str(info.value)


def test_accumulator_names_percentages_too():
    accumulator = fm.FairnessAccumulator()
    for start in range(0, N, 200):
        accumulator.update(Y[start:start + 200], P[start:start + 200] * 100, {"site": G[start:start + 200]})
    merged = fm.FairnessAccumulator().merge(accumulator)
    for report in (accumulator.result(), merged.result()):
        (note,) = [message for message in report.warnings if "sigmoid" in message]
        assert "percentages" in note and "divide the scores by 100" in note
