"""Tests of synth_core.tables (loading files, public rows) and of preparing a run's tables."""

import gzip

import numpy as np
import pandas as pd
import pytest

from synth_core.errors import ConfigError, DataError, SchemaError
from synth_core.schema import ColumnSpec, Schema
from synth_core.backends.inputs import prepare_inputs
from synth_core.tables import PublicInfo, PublicRows, load_table

SCHEMA = Schema((
    ColumnSpec("age", "numeric", lower=17, upper=90, bins=8),
    ColumnSpec("sex", "categorical", categories=("Female", "Male")),
    ColumnSpec("income", "categorical", categories=(0, 1)),
))


def people(n=6, **extra) -> pd.DataFrame:
    df = pd.DataFrame({
        "age": np.linspace(17, 90, n).round().astype(int),
        "sex": (["Female", "Male"] * n)[:n],
        "income": ([0, 1, 1] * n)[:n],
    })
    for name, values in extra.items():
        df[name] = values
    return df


def write(path, text: str, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


# ---------------------------------------------------------------- CSV


def test_load_csv_infers_types_strips_spaces_and_keeps_empty_cells_missing(tmp_path):
    path = write(tmp_path / "t.csv", " age , sex ,note\n39, Male ,NA\n50,,\n 7 ,Female,  \n")
    df = load_table(path)
    assert list(df.columns) == ["age", "sex", "note"]
    assert df["age"].tolist() == [39, 50, 7] and df["age"].dtype == np.int64
    assert df["sex"].tolist()[0::2] == ["Male", "Female"] and pd.isna(df["sex"][1])
    assert df["note"].tolist()[0] == "NA"  # only empty cells are missing
    assert df["note"][1:].isna().all()


def test_load_csv_column_of_numbers_with_blank_cells_is_numeric(tmp_path):
    df = load_table(write(tmp_path / "t.csv", "n,v\n1, \n2,3.5\n"))
    assert df["v"].dtype == np.float64
    assert np.isnan(df["v"][0]) and df["v"][1] == 3.5


def test_long_codes_in_a_column_with_blank_cells_keep_their_written_form(tmp_path):
    """Blank cells make a column of numbers floats, which merge 18-digit codes:
    20 distinct account codes read as 10 values, none of them written in the file."""
    codes = [str(123456789012345600 + 7 * i) for i in range(20)]
    (tmp_path / "t.csv").write_text("acct,grp\n,a\n" + "".join(f"{c},b\n" for c in codes))
    df = load_table(tmp_path / "t.csv")
    assert df["acct"].dropna().tolist() == codes and df["acct"].isna().sum() == 1
    # below 2^53 a column of numbers with blank cells stays numeric
    (tmp_path / "u.csv").write_text("x,y\n,a\n9007199254740991,b\n5,c\n")
    assert pd.api.types.is_float_dtype(load_table(tmp_path / "u.csv")["x"])
    # quantities past 2^53 stay numbers: written in exponent form, or integers that
    # floats hold exactly (10**18)
    (tmp_path / "q.csv").write_text("sci,big,g\n,,a\n1.310227e+16,1000000000000000000,b\n"
                                    "2.5e+17,2000000000000000000,c\n")
    quantities = load_table(tmp_path / "q.csv")
    assert all(pd.api.types.is_float_dtype(quantities[c]) for c in ("sci", "big"))


def test_load_csv_gz(tmp_path):
    path = tmp_path / "t.csv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("a,b\n1,x\n2,y\n")
    assert load_table(path).to_dict("list") == {"a": [1, 2], "b": ["x", "y"]}


def test_load_csv_with_utf8_bom(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffname,city\nJosé,Zürich\n".encode("utf-8"))
    df = load_table(path)
    assert list(df.columns) == ["name", "city"]
    assert df.iloc[0].tolist() == ["José", "Zürich"]


def test_latin1_file_says_which_encodings_were_tried(tmp_path):
    path = write(tmp_path / "latin.csv", "name,x\nAnna,1\nJosé,2\n", encoding="latin-1")
    with pytest.raises(DataError) as err:
        load_table(path)
    message = str(err.value)
    assert f"'{path}' (line 3)" in message
    assert "tried utf-8, utf-8-sig" in message
    assert "Save the file as UTF-8" in message


@pytest.mark.parametrize("text, line, fields", [
    ("a,b\n1,2\n3,4,5\n6,7\n", 3, 3),   # pandas reports this row
    ("a,b\n1,2,3\n4,5\n", 2, 3),        # pandas only warns (and drops data) here
])
def test_ragged_csv_reports_the_line(tmp_path, text, line, fields):
    path = write(tmp_path / "ragged.csv", text)
    with pytest.raises(DataError) as err:
        load_table(path)
    assert f"'{path}' line {line} has {fields} fields, but the header has 2" in str(err.value)
    assert "check for unquoted commas" in str(err.value)


def test_a_semicolon_file_with_decimal_commas_is_said_to_be_one(tmp_path):
    """Excel's usual European export: the decimal commas make ragged rows, and the
    message spoke of unquoted commas, not of the semicolons."""
    path = write(tmp_path / "eu.csv", "\ufeffrégion;âge;poids\nBretagne;21;61,5\n")
    with pytest.raises(DataError) as err:
        load_table(path)
    assert "line 2 has 2 fields, but the header has 1. The header is separated by " \
           "semicolons, not commas" in str(err.value)


@pytest.mark.parametrize("sep, what", [(";", "semicolons"), ("\t", "tabs"), ("|", "vertical bars")])
def test_a_csv_separated_otherwise_is_refused_not_read_as_one_column(tmp_path, sep, what):
    path = write(tmp_path / "semi.csv", sep.join(["name", "age"]) + "\n" + sep.join(["A", "3"]) + "\n")
    with pytest.raises(DataError, match=f"reads as one column .* separated by {what}, not commas"):
        load_table(path)
    # a real one-column table, and a comma file whose text holds a semicolon, load
    assert list(load_table(write(tmp_path / "one.csv", "name\nA;B\n")).columns) == ["name"]
    assert load_table(write(tmp_path / "two.csv", "a,b\nx;y,1\n")).iloc[0, 0] == "x;y"


def test_empty_file(tmp_path):
    path = write(tmp_path / "empty.csv", "")
    with pytest.raises(DataError, match=r"empty\.csv' is empty: it has no header row"):
        load_table(path)


def test_header_only_file(tmp_path):
    path = write(tmp_path / "header.csv", "a,b,c\n")
    with pytest.raises(DataError, match=r"header\.csv' has a header but no rows"):
        load_table(path)


def test_duplicate_headers_are_named(tmp_path):
    path = write(tmp_path / "dup.csv", "age,sex,age, sex ,x\n1,2,3,4,5\n")
    with pytest.raises(DataError) as err:
        load_table(path)
    assert "dup.csv' has duplicated column names: 'age', 'sex'" in str(err.value)


def test_blank_header(tmp_path):
    path = write(tmp_path / "blank.csv", "a,,c\n1,2,3\n")
    with pytest.raises(DataError, match=r"blank\.csv' has blank column names \(column 2\)"):
        load_table(path)


def test_file_not_found_and_display_name(tmp_path):
    with pytest.raises(DataError, match="file 'upload.csv' not found"):
        load_table(tmp_path / "tmp123.csv", name="upload.csv")


@pytest.mark.parametrize("file_name", ["data.xlsx", "data.json", "data.pkl", "data"])
def test_unsupported_extension(tmp_path, file_name):
    path = write(tmp_path / file_name, "a\n1\n")
    with pytest.raises(DataError) as err:
        load_table(path)
    assert f"cannot read '{path}': unsupported file type" in str(err.value)
    assert ".csv, .csv.gz, .parquet, .pq" in str(err.value)


# ---------------------------------------------------------------- Parquet


@pytest.mark.parametrize("suffix", [".parquet", ".pq"])
def test_load_parquet(tmp_path, suffix):
    path = tmp_path / f"t{suffix}"
    pd.DataFrame({"a": [1, 2], " b ": [" x", "y "], "c": [0.5, None]}).to_parquet(path)
    df = load_table(path)
    assert list(df.columns) == ["a", "b", "c"]
    assert df["a"].tolist() == [1, 2] and df["b"].tolist() == ["x", "y"]
    assert df["c"][0] == 0.5 and np.isnan(df["c"][1])


def test_parquet_without_rows(tmp_path):
    path = tmp_path / "t.parquet"
    pd.DataFrame({"a": pd.Series([], dtype=int)}).to_parquet(path)
    with pytest.raises(DataError, match=r"t\.parquet' has columns but no rows"):
        load_table(path)


def test_file_that_is_not_parquet(tmp_path):
    path = write(tmp_path / "fake.parquet", "a,b\n1,2\n")
    with pytest.raises(DataError, match=r"cannot read '.*fake\.parquet' as Parquet"):
        load_table(path)


def test_decoded_table_survives_a_csv_file(tmp_path):
    """Synthetic data written to CSV and loaded again encodes to the same codes."""
    schema = Schema((*SCHEMA.columns,
                     ColumnSpec("w", "numeric", lower=0.0, upper=1.0, bins=5, missing=True),
                     ColumnSpec("c", "categorical", categories=("1", "2", "x"), missing=True)))
    rng = np.random.default_rng(3)
    codes = pd.DataFrame({c.name: rng.integers(0, c.size, 200) for c in schema.columns})
    schema.decode(codes, rng).to_csv(tmp_path / "synth.csv", index=False)
    again = schema.encode(load_table(tmp_path / "synth.csv"))
    pd.testing.assert_frame_equal(again, codes)


# ---------------------------------------------------------------- public rows


@pytest.mark.parametrize("flags", [
    [True, False, True, False],
    [1, 0, 1, 0],
    [1.0, 0.0, 1.0, 0.0],
    ["true", "false", "TRUE", "False"],
    ["yes", "no", "Yes", "NO"],
    ["1", "0", " 1 ", "0"],
])
def test_flag_column_split(flags):
    df = people(4, is_public=flags)
    private, public = PublicRows(flag_column="is_public").split(df)
    assert "is_public" not in private.columns and "is_public" not in public.columns
    assert public["age"].tolist() == df["age"][[0, 2]].tolist()
    assert private["age"].tolist() == df["age"][[1, 3]].tolist()
    assert list(public.index) == [0, 1]


def test_flag_column_from_csv(tmp_path):
    path = write(tmp_path / "t.csv", "age,pub\n20,true\n30,false\n40,True\n")
    private, public = PublicRows(flag_column="pub").split(load_table(path))
    assert private["age"].tolist() == [30] and public["age"].tolist() == [20, 40]


def test_bad_flag_values():
    df = people(6, is_public=["yes", "maybe", "no", "maybe", None, 2])
    with pytest.raises(DataError) as err:
        PublicRows(flag_column="is_public").split(df)
    message = str(err.value)
    assert "flag column 'is_public' has 4 rows that are not true or false" in message
    assert "'maybe' (2 rows)" in message and "<empty> (1 row)" in message and "2 (1 row)" in message
    assert "true/false, yes/no or 1/0" in message


def test_unknown_flag_column_lists_columns():
    with pytest.raises(DataError) as err:
        PublicRows(flag_column="public").split(people())
    assert "flag column 'public' is not in the table" in str(err.value)
    assert "'age', 'sex', 'income'" in str(err.value)


def test_public_rows_need_exactly_one_source():
    with pytest.raises(ConfigError):
        PublicRows()
    with pytest.raises(ConfigError):
        PublicRows(table=people(), flag_column="f")


def test_public_table_split_returns_both_tables():
    df, pub = people(), people(3)
    rows = PublicRows(table=pub, source_name="pub.csv")
    private, public = rows.split(df)
    assert private is df and public is pub


def test_public_info():
    info = PublicInfo(columns=["sex"])
    assert info.columns == ("sex",)
    assert info.has_public_columns and not info.has_public_rows
    assert PublicInfo(rows=PublicRows(flag_column="f")).has_public_rows
    info.validate(SCHEMA)
    with pytest.raises(SchemaError, match="public columns not in the schema: 'race'"):
        PublicInfo(columns=("sex", "race")).validate(SCHEMA)
    with pytest.raises(SchemaError, match="every column is marked public"):
        PublicInfo(columns=SCHEMA.names).validate(SCHEMA)


# ---------------------------------------------------------------- preparing a run's tables


def prepared(private, public=None, **kw):
    """(private codes, public codes or None) of the in-memory input path."""
    inputs = prepare_inputs(private, public, schema=kw.pop("schema", SCHEMA), **kw)
    return (inputs.private.to_frame(),
            None if inputs.public is None else inputs.public.to_frame())


def test_prepare_without_public_data():
    private, public = prepared(people())
    assert public is None
    assert list(private.columns) == list(SCHEMA.names)
    assert (private.dtypes == np.int64).all()
    assert private["sex"].tolist() == [0, 1, 0, 1, 0, 1]


def test_prepare_with_public_table():
    private, pub = prepared(people(), people(3), public_name="pub.csv", public_columns=("sex",))
    assert len(private) == 6 and len(pub) == 3
    assert pub["income"].tolist() == [0, 1, 1]


def test_public_table_that_does_not_fit_is_named():
    pub = people(14)
    pub.loc[:11, "sex"] = "F"
    with pytest.raises(DataError) as err:
        prepared(people(), pub, public_name="pub.csv")
    assert str(err.value).startswith(
        "public table 'pub.csv': column 'sex' has values not in the schema: 'F' (12 rows).")


def test_private_table_that_does_not_fit_is_named():
    with pytest.raises(DataError, match="private table 'adult.csv': column 'income'"):
        prepared(people(income=[0, 1, 2, 0, 1, 2]), data_name="adult.csv")


def test_prepare_with_flag_column():
    df = people(6, pub=["no", "no", "yes", "no", "yes", "no"])
    private, pub = prepared(df, public_flag="pub")
    assert len(private) == 4 and len(pub) == 2
    assert pub["age"].tolist() == SCHEMA.encode(df.iloc[[2, 4]])["age"].tolist()


def test_every_row_public_leaves_no_private_rows():
    with pytest.raises(DataError, match="private table 'data' has no rows once the public rows"):
        prepared(people(3, pub=[1, 1, 1]), public_flag="pub", data_name="data")


def test_no_rows_flagged_public():
    with pytest.raises(DataError, match=r"public rows \(flag column 'pub'\) has no rows"):
        prepared(people(3, pub=[0, 0, 0]), public_flag="pub")


def test_flag_column_must_not_be_a_schema_column():
    with pytest.raises(SchemaError, match="flag column 'income' is also a schema column"):
        prepared(people(), public_flag="income")


def test_prepare_checks_public_columns():
    with pytest.raises(SchemaError, match="public columns not in the schema: 'Sex'"):
        prepared(people(), public_columns=("Sex",))
