"""The command line's table readers (pyarrow) against what pandas, and so ``fairmedfm score``, reads."""
from __future__ import annotations

import gzip
import io
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pytest

from fairmedfm_fast._cli import tables as _tables
from fairmedfm_fast._cli.tables import TableError, key_strings, open_table
from fairmedfm_fast._inputs.value_codes import group_name

TRICKY_CSV = """\
id,race,when,flag,score,age,note,empty
1,white,2020-01-03,True,0.5,45,NA,
2,None,2021-02-03,False,0.25,,<NA>,
3,<NA>,2021-02-04,TRUE,1e-3,61,null,
4,,2021-02-05,false,1,33.0,"",
5,black,2021-02-06,True,0.75,50,x,
"""


def _read_both(path, **pandas_kwargs):
    table = open_table(path)
    frame = pd.read_csv(path, **pandas_kwargs)
    return table, table.read(table.columns), frame


def _same_values(column: pa.ChunkedArray, series: pd.Series):
    """Same missing entries and the same values (as fairmedfm would name groups)."""
    ours = column.to_pandas()
    assert ours.isna().tolist() == series.isna().tolist(), (ours.tolist(), series.tolist())
    present = ~series.isna()
    assert [group_name(v) for v in ours[present]] == [group_name(v) for v in series[present]]


def test_csv_types_and_missing_values_like_pandas(tmp_path):
    path = tmp_path / "tricky.csv"
    path.write_text(TRICKY_CSV)
    table, read, frame = _read_both(path)
    assert table.columns == list(frame.columns)
    for name in frame.columns:
        _same_values(read[name], frame[name])
    assert pa.types.is_string(read["when"].type)  # dates stay text, as in pandas
    assert pa.types.is_boolean(read["flag"].type) and frame["flag"].dtype == bool
    assert pa.types.is_integer(read["id"].type)


def test_csv_reads_only_the_columns_asked_for_in_that_order(tmp_path):
    path = tmp_path / "tricky.csv"
    path.write_text(TRICKY_CSV)
    read = open_table(path).read(["score", "id"])
    assert read.column_names == ["score", "id"]


def test_csv_header_with_repeats_and_blanks(tmp_path):
    path = tmp_path / "header.csv"
    path.write_text("a,a,,b\n1,2,3,4\n5,6,7,8\n")
    table, read, frame = _read_both(path)
    assert table.columns == list(frame.columns) == ["a", "a.1", "Unnamed: 2", "b"]
    assert read["a.1"].to_pylist() == [2, 6]


def test_csv_type_changing_after_the_first_block(tmp_path, monkeypatch):
    monkeypatch.setattr(_tables, "_BLOCK_SIZE", 64)
    lines = ["n,site,x"] + [f"{i},{i % 3},{i}.5" for i in range(40)] + ["40,hospital,NA", "41,2,1"]
    path = tmp_path / "late.csv"
    path.write_text("\n".join(lines) + "\n")
    _, read, frame = _read_both(path)
    for name in frame.columns:
        _same_values(read[name], frame[name])
    assert pa.types.is_string(read["site"].type) and pa.types.is_integer(read["n"].type)
    assert pa.types.is_floating(read["x"].type)


def test_tsv_and_gzip(tmp_path):
    frame = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", None]})
    frame.to_csv(tmp_path / "t.tsv.gz", sep="\t", index=False)
    read = open_table(tmp_path / "t.tsv.gz").read(["a", "b"])
    assert read.to_pydict() == {"a": [1, 2, 3], "b": ["x", "y", None]}
    with gzip.open(tmp_path / "t.jsonl.gz", "wt") as handle:
        handle.write('{"a": 1, "b": "x"}\n{"a": 2, "b": null}\n')
    assert open_table(tmp_path / "t.jsonl.gz").read(["b", "a"]).to_pydict() == {"b": ["x", None], "a": [1, 2]}


def test_json_lines_text_numbers_like_pandas(tmp_path):
    rows = [{"id": "001", "code": "1.5", "word": "a", "n": 1.0}, {"id": "002", "code": "2", "word": "b", "n": 2.0}]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    table = open_table(path)
    read = table.read(table.columns)
    frame = pd.read_json(path, lines=True)
    assert table.columns == list(frame.columns)
    for name in frame.columns:
        _same_values(read[name], frame[name])
    assert read["id"].to_pylist() == [1, 2]  # pandas reads "001" as the number 1


def test_parquet_and_feather_hide_a_saved_pandas_index(tmp_path):
    frame = pd.DataFrame({"label": [0, 1, 1], "sex": ["F", "M", "F"]},
                         index=pd.Index(["a", "b", "c"], name="image_id"))
    frame.to_parquet(tmp_path / "t.parquet")
    frame.reset_index().to_feather(tmp_path / "t.feather")
    assert open_table(tmp_path / "t.parquet").columns == list(pd.read_parquet(tmp_path / "t.parquet").columns)
    assert open_table(tmp_path / "t.feather").columns == ["image_id", "label", "sex"]
    read = open_table(tmp_path / "t.parquet").read(["sex"])
    assert read.column_names == ["sex"] and read["sex"].to_pylist() == ["F", "M", "F"]


def test_arrow_stream_files(tmp_path):
    table = pa.table({"a": [1, 2], "b": ["x", "y"]})
    with pa.OSFile(str(tmp_path / "s.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    feather.write_feather(table, tmp_path / "f.arrow")
    for name in ("s.arrow", "f.arrow"):
        opened = open_table(tmp_path / name)
        assert opened.columns == ["a", "b"] and opened.read(["b"]).to_pydict() == {"b": ["x", "y"]}


def test_excel_and_json_through_pandas_with_mixed_columns(tmp_path):
    frame = pd.DataFrame({"site": [1, "north", 2.0, None], "x": [0.5, 0.25, 1.0, 0.0]})
    frame.to_excel(tmp_path / "t.xlsx", index=False)
    read = open_table(tmp_path / "t.xlsx").read(["site", "x"])
    assert read["site"].to_pylist() == ["1", "north", "2", None]
    frame.to_json(tmp_path / "t.json", orient="records")
    assert open_table(tmp_path / "t.json").read(["x"])["x"].to_pylist() == [0.5, 0.25, 1.0, 0.0]


@pytest.mark.parametrize("values", [
    pa.array([1, 20, 3]),  # (with a missing value pandas makes them floats, "1.0"; we keep "1")
    pa.array([1.0, 0.1, np.nan, 1e-5, 1e16, 123456789.0]),
    pa.array([True, False, None]),
    pa.array(["a", None, "b"]),
    pa.array(["a", "b", "a"]).dictionary_encode(),
    pa.array(["x", "yy"], pa.large_string()),
])
def test_key_strings_are_pandas_astype_str(values):
    expected = pd.Series(values.to_pandas()).astype(str)
    ours = key_strings(values).to_pylist()
    assert ours == [None if pd.isna(v) else v for v in expected.tolist()]


@pytest.mark.parametrize("name,content,words", [
    ("t.doc", b"", ["format", ".csv"]),
    ("t.parquet.gz", b"", ["format"]),
    ("t.parquet", b"PAR1 nonsense", ["cannot read", "PARQUET"]),
    ("t.feather", b"nonsense", ["cannot read", "FEATHER"]),
    ("t.csv", b"", ["cannot read", "CSV"]),
    ("t.jsonl", b"{not json\n", ["cannot read", "JSONL"]),
    ("t.json", b"[{not json", ["cannot read", "JSON"]),
    ("t.xlsx", b"not a zip", ["cannot read", "Excel"]),
])
def test_unreadable_files_raise_one_clear_error(tmp_path, name, content, words):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(TableError) as info:
        open_table(path, "the predictions table").read(["a"])
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_missing_file(tmp_path):
    with pytest.raises(TableError, match="does not exist"):
        open_table(tmp_path / "nope.parquet")


def test_bom_is_not_part_of_the_first_name(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbfsex,label\nF,1\n")
    assert open_table(path).columns == list(pd.read_csv(io.BytesIO(path.read_bytes())).columns) == ["sex", "label"]


def test_json_lines_dates_stay_text_in_place(tmp_path):
    path = tmp_path / "dates.jsonl"
    path.write_text('{"a": 1, "visit": "2020-01-03", "z": "x"}\n{"a": 2, "visit": "2021-02-03", "z": "y"}\n')
    table = open_table(path)
    assert table.columns == list(pd.read_json(path, lines=True).columns) == ["a", "visit", "z"]
    assert table.read(["visit"])["visit"].to_pylist() == ["2020-01-03", "2021-02-03"]


def test_csv_that_is_not_utf8(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("sex,label\nF\xe9,1\nM,0\n".encode("latin-1"))
    with pytest.raises(TableError, match="UTF-8"):
        open_table(path).read(["sex", "label"])
