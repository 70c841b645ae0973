"""The one-number functions as scikit-learn scorers, with metadata routing in cross_validate.

Each fold must receive its own rows of ``sensitive_features``: the per-fold scores are compared
with values computed by hand on that fold's test rows (fit on its training rows), and with the
values the oracle gives for the same fold.
"""
import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import make_scorer
from sklearn.model_selection import KFold, cross_validate

import fairmedfm_fast as fm

LOWER_IS_BETTER = ("auc_gap", "accuracy_gap", "bce_gap", "ece_gap", "equal_opportunity_difference")
HIGHER_IS_BETTER = ("worst_group_auc", "equalized_odds_score")


def _data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    # Groups change along the rows, so that each unshuffled fold has a different group mix.
    sex = np.where(rng.random(n) < np.linspace(0.2, 0.8, n), "F", "M")
    site = np.array(["A", "B", "C"])[(np.arange(n) * 3) // n]
    logit = X[:, 0] - 0.5 * X[:, 1] + (sex == "F") * 0.8
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return X, y, pd.DataFrame({"sex": sex, "site": site})


def _scorers():
    scorers = {}
    for name in LOWER_IS_BETTER + HIGHER_IS_BETTER:
        scorer = make_scorer(getattr(fm, name), response_method="predict_proba",
                             greater_is_better=name in HIGHER_IS_BETTER)
        scorers[name] = scorer.set_score_request(sensitive_features=True)
    return scorers


@pytest.mark.parametrize("groups_form", ["series", "dataframe", "numpy"])
def test_cross_validate_routes_each_folds_groups(groups_form):
    import fairmedfm

    X, y, table = _data()
    groups = {"series": table["sex"], "dataframe": table, "numpy": table["sex"].to_numpy()}[groups_form]
    cv = KFold(4, shuffle=False)
    with sklearn.config_context(enable_metadata_routing=True):
        result = cross_validate(LogisticRegression(), X, y, cv=cv, scoring=_scorers(),
                                params={"sensitive_features": groups})
    for fold, (train, test) in enumerate(cv.split(X, y)):
        model = LogisticRegression().fit(X[train], y[train])
        proba = model.predict_proba(X[test])[:, 1]
        fold_groups = groups.iloc[test] if hasattr(groups, "iloc") else groups[test]
        other = np.roll(np.arange(len(y)), len(y) // 2)[test]  # the rows of another fold
        other_groups = groups.iloc[other] if hasattr(groups, "iloc") else groups[other]
        for name in LOWER_IS_BETTER + HIGHER_IS_BETTER:
            sign = 1 if name in HIGHER_IS_BETTER else -1
            expected = getattr(fm, name)(y[test], proba, sensitive_features=fold_groups)
            oracle = getattr(fairmedfm, name)(y[test], proba, sensitive_features=fold_groups)
            score = result[f"test_{name}"][fold]
            assert score == pytest.approx(sign * expected, rel=1e-9, abs=1e-12), (name, fold)
            assert score == pytest.approx(sign * oracle, rel=1e-9, abs=1e-12), (name, fold)
        # The groups do matter here: another fold's groups would give a different auc_gap.
        wrong = fm.auc_gap(y[test], proba, sensitive_features=np.asarray(other_groups))
        assert result["test_auc_gap"][fold] != pytest.approx(-wrong, rel=1e-6), fold


def test_scorer_with_pandas_inputs_and_shuffled_folds():
    import fairmedfm

    X, y, table = _data(seed=3)
    index = pd.Index([f"id{i}" for i in range(len(y))])
    X = pd.DataFrame(X, index=index)
    y = pd.Series(y, index=index)
    groups = table.set_index(index)["site"]
    cv = KFold(3, shuffle=True, random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_scorer(fm.auc_gap, response_method="predict_proba", greater_is_better=False)
        scorer = scorer.set_score_request(sensitive_features=True)
        result = cross_validate(LogisticRegression(), X, y, cv=cv, scoring=scorer,
                                params={"sensitive_features": groups})
    for fold, (train, test) in enumerate(cv.split(X, y)):
        model = LogisticRegression().fit(X.iloc[train], y.iloc[train])
        proba = model.predict_proba(X.iloc[test])[:, 1]
        expected = fairmedfm.auc_gap(y.iloc[test], proba, sensitive_features=groups.iloc[test])
        assert result["test_score"][fold] == pytest.approx(-expected, rel=1e-9, abs=1e-12)
