"""Hostile and broken input: generated CSV and Parquet files through the loaders
(load_table, infer_schema, prepare_inputs) succeed or fail with a specific
user-facing error, never another exception or a hang; CSV exports neutralise
formula-like cells; nothing loads user data with pickle or eval; uploads are
size-limited.

A fast subset of benchmarks/fuzz_loaders.py (which runs >= 10^4 inputs per loader)."""

from __future__ import annotations

import gzip
import io
import os
import re
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from synth_core.api import prepare_inputs
from synth_core.errors import DataError, SchemaError, SynthError
from synth_core.report import write_table
from synth_core.schema import Schema, infer_schema
from synth_core.tables import load_table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import fuzz_loaders  # noqa: E402


# -- the generated inputs ----------------------------------------------------------

@pytest.fixture(scope="module")
def checker():
    c = fuzz_loaders.Checker(limit=20.0)
    yield c
    c.close()


@pytest.mark.slow
@pytest.mark.parametrize("loader, inputs", [("csv", 120), ("parquet", 90)])
def test_generated_inputs_never_crash_or_hang(checker, tmp_path, loader, inputs):
    result = fuzz_loaders.fuzz(loader, inputs, seed=7, checker=checker, folder=str(tmp_path))
    assert result["crashed"] == 0, result["crashes"][:3]
    # the generators exercise both sides
    assert result["accepted"] > inputs // 10 and result["rejected"] > inputs // 4
    assert result["accepted"] + result["rejected"] == inputs


def test_generators_cover_every_case_and_are_reproducible():
    names = {fuzz_loaders.generate("csv", i)[0] for i in range(40)}
    assert {"latin1", "utf16", "garbage", "ragged", "empty", "header_only", "one_column",
            "many_columns", "many_categories", "nan_inf", "dup_headers", "formulas",
            "long_cells"} <= names
    assert fuzz_loaders.generate("parquet", 5, seed=3) == fuzz_loaders.generate("parquet", 5, seed=3)


def test_a_fifo_is_refused_not_read(tmp_path):
    # reading a FIFO with no writer would block forever
    fifo = tmp_path / "stuck.csv"
    os.mkfifo(fifo)
    with pytest.raises(DataError, match="is not a file"):
        load_table(fifo)


@pytest.mark.slow
def test_checker_reports_a_timeout_as_a_crash_and_restarts(tmp_path):
    wide = tmp_path / "wide.csv"
    cols = 3000
    wide.write_text(",".join(f"c{i}" for i in range(cols)) + "\n" + ",".join("1" * cols) + "\n")
    c = fuzz_loaders.Checker(limit=0.02)   # far less than 3000 columns take
    try:
        out = c.check(str(wide), "wide.csv")
        assert out["outcome"] == "crashed" and out["error"] == "timeout"
        c.limit = 20.0
        ok = tmp_path / "ok.csv"
        ok.write_text("a,b\n1,x\n2,y\n")
        assert c.check(str(ok), "ok.csv")["outcome"] == "accepted"  # a fresh worker
    finally:
        c.close()


# -- specific hostile files: a specific message each ---------------------------------

def _write(tmp_path, name, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("name, data, message", [
    ("latin.csv", "name\nJosé\n".encode("latin-1"), r"line 2\): it is not UTF-8"),
    ("u16.csv", "a,b\n1,2\n".encode("utf-16"), "looks like UTF-16"),
    ("bin.csv", b"\x00\x01\x02\xff\xfe\x00" * 50, "not UTF-8"),
    ("xl.csv", b"PK\x03\x04\x14\x00\x06\x00\xff\xfe" + bytes(100), "Excel"),
    ("empty.csv", b"", "is empty"),
    ("head.csv", b"a,b,c\n", "has a header but no rows"),
    ("dup.csv", b"a,b,a\n1,2,3\n", "duplicated column names: 'a'"),
    ("blank.csv", b"a,,c\n1,2,3\n", r"blank column names \(column 2\)"),
    ("ragged.csv", b"a,b\n1,2\n3,4,5\n", "line 3 has 3 fields, but the header has 2"),
    ("short.csv.gz", gzip.compress(b"a,b\n1,2\n")[:15], "not a valid gzip file"),
    ("plain.csv.gz", b"a,b\n1,2\n", "not a valid gzip file"),
    ("junk.parquet", b"PAR1" + bytes(64) + b"PAR1", "as Parquet"),
    ("csv.parquet", b"a,b\n1,2\n", "as Parquet"),
    ("table.xlsx", b"a,b\n1,2\n", "unsupported file type"),
])
def test_hostile_files_get_specific_errors(tmp_path, name, data, message):
    path = _write(tmp_path, name, data)
    with pytest.raises(DataError, match=message) as info:
        load_table(path, name=name)
    assert name in str(info.value)
    with pytest.raises(DataError, match=message):
        prepare_inputs(path)


def test_truncated_gzip_is_a_data_error_not_eoferror(tmp_path):
    raw = gzip.compress(("a,b\n" + "1,2\n" * 5000).encode())
    path = _write(tmp_path, "t.csv.gz", raw[: len(raw) // 2])
    with pytest.raises(DataError, match="complete"):
        load_table(path)


def _parquet(tmp_path, name, table) -> Path:
    import pyarrow.parquet as pq

    path = tmp_path / name
    pq.write_table(table, path)
    return path


def test_parquet_nested_values_name_the_column(tmp_path):
    import pyarrow as pa

    path = _parquet(tmp_path, "n.parquet", pa.table({"ok": [1, 2], "tags": [[1], [2, 3]]}))
    with pytest.raises(DataError, match="column 'tags' holds lists or records") as info:
        load_table(path)
    assert info.value.column == "tags"
    path = _parquet(tmp_path, "s.parquet", pa.table({"rec": [{"x": 1}, {"x": 2}], "k": [1, 2]}))
    with pytest.raises(DataError, match="column 'rec'"):
        prepare_inputs(path)


def test_parquet_decimal_and_binary_columns_load(tmp_path):
    import decimal

    import pyarrow as pa

    path = _parquet(tmp_path, "d.parquet", pa.table({
        "price": [decimal.Decimal("1.25"), decimal.Decimal("2.50")],
        "blob": pa.array([b"ab", b"cd"], type=pa.binary()),
        "k": [0, 1]}))
    df = load_table(path)  # Decimal values (no .str accessor) load as they are
    assert df["price"].tolist() == [decimal.Decimal("1.25"), decimal.Decimal("2.50")]
    schema = infer_schema(df, source="private")
    assert schema.names == ("price", "blob", "k")


def test_dataframe_with_list_cells_is_a_data_error():
    df = pd.DataFrame({"a": [[1], [2]], "b": [1, 2]})
    with pytest.raises(DataError, match="column 'a' holds list values"):
        infer_schema(df, source="private")
    with pytest.raises(DataError, match="column 'a' holds list values"):
        Schema.from_json({"a": 2, "b": 3}).encode(df)


@pytest.mark.parametrize("cells, error", [
    (["1", "2", "inf"], SchemaError),       # a number column with inf: not a finite category
    (["1", "", ""], None),                  # missing cells get a missing code
])
def test_nan_and_inf_cells(tmp_path, cells, error):
    path = _write(tmp_path, "x.csv", ("x,y\n" + "".join(f"{c},{i}\n" for i, c in enumerate(cells))).encode())
    if error is None:
        schema = infer_schema(load_table(path), source="private")
        assert schema.column("x").missing
    else:
        with pytest.raises(error, match="'x'"):
            prepare_inputs(path)


def test_thousands_of_columns_and_categories(tmp_path):
    cols = 3000
    text = ",".join(f"c{i}" for i in range(cols)) + "\n" + ",".join("1" for _ in range(cols)) + "\n"
    schema = prepare_inputs(_write(tmp_path, "wide.csv", text.encode())).schema
    assert len(schema.names) == cols
    tall = "id\n" + "".join(f"v{i}\n" for i in range(5000))
    with pytest.raises(SchemaError, match="5,000 distinct values, more than max_categories=100"):
        prepare_inputs(_write(tmp_path, "tall.csv", tall.encode()))


def test_formula_cells_load_as_text(tmp_path):
    path = _write(tmp_path, "f.csv", b"a,b\n=cmd|' /C calc'!A0,1\n@SUM(A1),2\n")
    df = load_table(path)
    assert df["a"].tolist() == ["=cmd|' /C calc'!A0", "@SUM(A1)"]


def test_loader_errors_are_synth_errors_with_the_file_name(tmp_path):
    # every generated file of the subset that is rejected names the file
    rng_names = [fuzz_loaders.generate("csv", i, seed=11) for i in range(20)]
    for i, (case, data, suffix) in enumerate(rng_names):
        name = f"in{i}{suffix}"
        path = _write(tmp_path, name, data)
        try:
            load_table(path, name=name)
        except SynthError as exc:
            assert name in str(exc), (case, str(exc))


# -- CSV export neutralises formula-like cells ------------------------------------------

def test_csv_export_quotes_formula_like_text_but_not_numbers(tmp_path):
    df = pd.DataFrame({
        "text": ["=cmd|' /C calc'!A0", "+1+1", "-2", "-3.5", "@SUM(A1)", "\t=1", "\rx",
                 "-inf", "+7", "-1e5", "a=b", "", None],
        "number": [-3.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
        "category": pd.Categorical(["=x", "y"] * 6 + ["=x"]),
    })
    path = tmp_path / "s.csv"
    write_table(path, df)
    back = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert back["text"].tolist() == [
        "'=cmd|' /C calc'!A0", "'+1+1", "-2", "-3.5", "'@SUM(A1)", "'\t=1", "'\rx",
        "'-inf", "+7", "-1e5", "a=b", "", ""]
    assert back["number"].tolist()[0] == "-3.5"          # numbers stay numbers
    assert back["category"].tolist()[:2] == ["'=x", "y"]  # categorical columns too
    assert df["text"][0] == "=cmd|' /C calc'!A0"          # the caller's frame is unchanged


def test_csv_export_neutralises_headers_and_parquet_is_untouched(tmp_path):
    df = pd.DataFrame({"=HYPERLINK(\"x\")": ["a"], "-b": ["=1"], "ok": [1]})
    write_table(tmp_path / "h.csv", df)
    header = (tmp_path / "h.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header.startswith("\"'=HYPERLINK(\"\"x\"\")\",'-b,ok")
    write_table(tmp_path / "h.parquet", df)
    assert pd.read_parquet(tmp_path / "h.parquet").equals(df)


def test_no_cell_of_an_exported_csv_starts_a_formula(tmp_path):
    rng = np.random.default_rng(0)
    cells = [str(rng.choice(fuzz_loaders.FORMULAS + fuzz_loaders.WEIRD_NUMBERS)) for _ in range(500)]
    write_table(tmp_path / "r.csv", pd.DataFrame({"c": cells}))
    number = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
    # what a spreadsheet sees: every line of the raw file, split at commas
    # outside quotes (a bare CR would start a new row)
    import csv
    with open(tmp_path / "r.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    assert len(rows) == 501
    for row in rows:
        for value in row:
            if value and value[0] in "=+-@\t\r":
                assert number.fullmatch(value), value


# -- no pickle or eval; upload size limit ------------------------------------------------

def test_nothing_in_synth_core_uses_pickle_or_eval():
    pattern = re.compile(r"\bpickle\b|read_pickle|allow_pickle\s*=\s*True|\beval\s*\(|\bexec\s*\("
                         r"|torch\.load|yaml\.load\b|marshal\.loads|shelve\.")
    hits = []
    for path in sorted((ROOT / "synth_core").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not hits, hits


def test_streamlit_upload_size_is_limited():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    size = config["server"]["maxUploadSize"]
    assert isinstance(size, int) and 1 <= size <= 1000   # megabytes


def test_parquet_round_trip_of_a_generated_valid_table(tmp_path):
    # a valid generated Parquet input is accepted all the way through
    case, data, suffix = fuzz_loaders.generate("parquet", 0)
    assert case == "valid"
    path = _write(tmp_path, "v" + suffix, data)
    inputs = prepare_inputs(path)
    assert inputs.schema.source == "private" and inputs.data.n == len(pd.read_parquet(io.BytesIO(data)))
