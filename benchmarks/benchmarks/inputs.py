"""``evaluate`` on the same three attributes handed in the forms users have (issue 40): the coding of
the attributes, not the engine, sets the difference between forms. ``benchmarks/scripts/input_forms.py``
prints the same comparison as a table, with the accumulator and the small calls."""
import numpy as np
import pandas as pd

import fairmedfm_fast as fm

from . import _data
from ._common import slow

FORMS = ("numpy U", "numpy S", "numpy object", "list", "pandas str", "pandas category", "pyarrow", "int8 codes")


def attributes(case: _data.Classification, form: str):
    """The case's attributes (names as ``_data.group_names``) in ``form``."""
    names = [np.array(_data.group_names(int(size))) for size in case.n_groups]
    text = {name: names[k][case.codes[k]] for k, name in enumerate(case.names)}  # NumPy U arrays
    if form == "numpy U":
        return text
    if form == "numpy S":
        return {name: values.astype("S") for name, values in text.items()}
    if form == "numpy object":
        return {name: values.astype(object) for name, values in text.items()}
    if form == "list":
        return {name: values.tolist() for name, values in text.items()}
    if form == "pandas str":
        return pd.DataFrame(text)
    if form == "pandas category":
        return pd.DataFrame({name: pd.Categorical(values) for name, values in text.items()})
    if form == "pyarrow":
        import pyarrow as pa

        return pa.table(text)
    if form == "int8 codes":
        return {name: case.codes[k].astype(np.int8) for k, name in enumerate(case.names)}
    raise ValueError(f"unknown form {form!r}")


@slow
class EvaluateInputForms:
    """1M samples, 3 attributes (5, 2 and 4 groups) in each form; issue 40 asks NumPy U and S arrays, int8
    codes and every pandas and Arrow form for at most 1.3x the fastest form, object arrays 2.5x, lists 4x."""

    params = ([1_000_000], list(FORMS))
    param_names = ["n_samples", "form"]

    def setup(self, n_samples, form):
        case = _data.classification(n_samples, 3, 5)
        self.args = (case.y_true, case.y_score, attributes(case, form))
        fm.evaluate(*self.args)  # compiles every kernel of this form's path

    def time_evaluate(self, n_samples, form):
        fm.evaluate(*self.args)


@slow
class AccumulatorBatches:
    """``FairnessAccumulator`` over 100 batches with 2 text attributes in a DataFrame (pandas' default
    ``str``), beside concatenating the batches and one ``evaluate``: issue 40 asks at most 1.5x with
    batches of 2,000 and 1.1x with batches of 20,000."""

    params = ([2_000, 20_000], ["accumulator", "concatenate + evaluate"])
    param_names = ["batch", "way"]

    def setup(self, batch, way):
        rng = np.random.default_rng(1)
        self.batches = []
        for _ in range(100):
            y = rng.integers(0, 2, batch)
            scores = (0.7 * rng.random(batch) + 0.3 * y).astype(np.float32)
            self.batches.append((y, scores, pd.DataFrame({"sex": rng.choice(["F", "M"], batch),
                                                          "site": rng.choice(["A", "B", "C", "D"], batch)})))
        self.time_batches(batch, way)  # compiles every kernel of the path

    def time_batches(self, batch, way):
        if way == "accumulator":
            accumulator = fm.FairnessAccumulator()
            for y, scores, frame in self.batches:
                accumulator.update(y, scores, frame)
            accumulator.result()
        else:
            fm.evaluate(np.concatenate([b[0] for b in self.batches]), np.concatenate([b[1] for b in self.batches]),
                        pd.concat([b[2] for b in self.batches], ignore_index=True))
