"""fairmedfm 0.4.2's own test suite, run against fairmedfm_fast (see tests/oracle_suite.py).

The suite is downloaded at test time (pip download of the source distribution; nothing of it is
kept in this repository), its imports are pointed at fairmedfm_fast, and it runs in a subprocess.
Every test passes except those listed below, each of which checks the oracle's own wording of a
message or note, its program name, or a return value this package changes on purpose.
"""
from __future__ import annotations

import pytest

pytest.importorskip("fairmedfm")  # the oracle rebuilds the suite's data file

import oracle_suite  # noqa: E402  (tests/ is on sys.path, see conftest.py)

EXPECTED_FAILURES = {
    # Program name: `python -m fairmedfm_fast --version` prints "fairmedfm-fast ...", not "fairmedfm ...".
    "test_cli::test_module_entry_point_reports_version",
    # Wording of command-line errors and notes ("no column(s) race", "several columns could be the
    # label: [...]", "5 prediction rows had no metadata", "masks from columns ..."): ours say the same
    # in other words ("--sensitive names 'race', which the table does not have", ...).
    "test_cli::test_missing_column_is_a_clear_error",
    "test_cli_inputs::test_ambiguous_and_missing_columns_are_explained",
    "test_cli_inputs::test_predictions_and_metadata_in_separate_files",
    "test_cli_inputs::test_segmentation_from_dice_or_mask_files",
    # Wording of warnings and errors of the Python API ("10 samples with a missing value", "reordered
    # to match the index of y_true", "paired by index", "pass y_score.loc[y_true.index]; to pair by
    # position", "group '1' contains only label 0", "same length").
    "test_evaluate::test_missing_attribute_values_leave_out_those_samples",
    "test_evaluate::test_pandas_inputs_with_the_same_ids_in_another_order_are_paired_by_index",
    "test_evaluate::test_a_default_index_next_to_a_shuffled_one_is_ambiguous",
    "test_evaluate::test_segmentation_inputs_are_paired_by_index",
    "test_metrics::test_invalid_classification_inputs_are_rejected[prob0-label0-group0-group '1' contains only label 0]",
    "test_metrics::test_invalid_classification_inputs_are_rejected[prob4-label4-group4-same length]",
}


@pytest.fixture(scope="module")
def outcomes():
    try:
        return oracle_suite.run_suite("fairmedfm_fast")
    except oracle_suite.Offline as exc:
        pytest.skip(f"cannot download fairmedfm 0.4.2's source distribution (offline?): {exc}")


def test_fairmedfm_suite_passes_except_for_its_wording(outcomes):
    assert len(outcomes) > 50, outcomes  # the whole suite ran
    failed = {test for test, outcome in outcomes.items() if outcome == "failed"}
    assert failed - EXPECTED_FAILURES == set(), "tests of fairmedfm 0.4.2 that fail here"
    assert EXPECTED_FAILURES - failed == set(), "listed as failing but pass now: take them off the list"
    assert {test for test, outcome in outcomes.items() if outcome == "skipped"} <= {
        "test_evaluate::test_torch_tensors_are_accepted"}  # PyTorch is not a test dependency
