"""From a raw table to a run: ``synth schema infer``, the run's kind flags, and
synthetic numbers at the data's own precision."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from synth_core.cli import main
from synth_core.errors import SynthError, render_controls
from synth_core.schema import ColumnSpec, Schema, infer_schema, load_schema
from synth_core.schema_infer import propose_schema

ROOT = Path(__file__).resolve().parent.parent
FAST = ("--rounds", "2", "--workload", "all-1way", "--fit-iters", "5", "--final-fit-iters", "5",
        "--seed", "0", "--quiet")
#: a set of zip codes, several with a leading zero
ZIPS = ["02134", "02139", "01001", "10001", "60601", "94103", "02115", "02116", "02118", "02119",
        "02120", "02121", "02122", "02124", "02125", "02126", "02127", "02128", "02129", "02130",
        "02131", "02132", "02135", "02136", "02138", "02140", "02141", "02142", "02143", "02144",
        "02145", "02148", "02149", "02150"]


def raw_table(n: int = 240, seed: int = 0) -> pd.DataFrame:
    """A downloaded table: a row number, zip codes, integer ages with blanks,
    incomes with 2 decimals, a sex column and a score column mixing numbers and 'NA'."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n).astype(float)
    age[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({
        "row": np.arange(1, n + 1),
        "zip": rng.choice(ZIPS, n),
        "age": pd.array(age, dtype="Int64"),
        "income": np.round(rng.normal(50, 10, n), 2),
        "sex": rng.choice(["F", "M"], n),
        "score": rng.choice(["1", "2", "3", "NA"], n),
    })


@pytest.fixture()
def files(tmp_path):
    """The raw table as one CSV, and split 90% private / 10% public."""
    df = raw_table()
    df.to_csv(tmp_path / "table.csv", index=False)
    df.iloc[24:].to_csv(tmp_path / "private.csv", index=False)
    df.iloc[:24].to_csv(tmp_path / "public.csv", index=False)
    return tmp_path


def infer(*args) -> int:
    """``synth schema infer`` in this process (its stderr is read with capsys)."""
    return main(["schema", "infer", *map(str, args)])


# ---------------------------------------------------------------- synth schema infer


def test_infer_proposes_a_reviewable_schema_for_a_raw_table(files, capsys):
    out = files / "schema.json"
    assert infer(files / "table.csv", "--out", out) == 0
    err = capsys.readouterr().err
    obj = json.loads(out.read_text())
    review = obj["review"]
    cols = {c["name"]: c for c in obj["columns"]}
    # the row number is a likely identifier: proposed for leaving out, named with the CLI flag
    assert review["proposed_drops"] == ["row"] and "row" not in cols
    assert "--drop row" in review["notes"]["row"] and "--drop row" in err
    # zip codes (leading zeros in the file) are categorical candidates, every code kept
    assert review["flagged_codes"] == ["zip"]
    assert cols["zip"]["kind"] == "categorical" and len(cols["zip"]["categories"]) == len(ZIPS)
    assert "leading zeros" in review["notes"]["zip"]
    # integer ages with blanks stay numeric, whole numbers, with a missing code
    assert cols["age"]["kind"] == "numeric" and cols["age"]["missing"] is True
    assert isinstance(cols["age"]["lower"], int)
    assert load_schema(out).column("age").integer
    # incomes keep their 2 decimals
    assert cols["income"]["decimals"] == 2
    # a column mixing numbers and text: a decision, and a note on how to make it numeric
    assert cols["score"]["kind"] == "categorical"
    assert set(cols["score"]["categories"]) == {"1", "2", "3", "NA"}
    assert "'NA'" in review["notes"]["score"] and "--numeric score" in review["notes"]["score"]
    # the leak warning: in the file and on stderr
    assert "read off the private table" in review["warning"]
    assert set(review["read_off_private"]) == {"zip", "age", "income", "sex", "score"}
    assert "WARNING" in err and "--schema" in err


def test_a_schema_with_its_review_block_is_not_privacy_protected(files):
    out = files / "schema.json"
    assert infer(files / "table.csv", "--out", out) == 0
    assert load_schema(out).source == "private"
    obj = json.loads(out.read_text())
    del obj["review"]
    out.write_text(json.dumps(obj))
    assert load_schema(out).source == "declared"


def test_infer_choices_override_the_proposal(files, capsys):
    out = files / "schema.json"
    assert infer(files / "table.csv", "--out", out, "--numeric", "zip", "--categorical", "row",
                 "--drop", "score") == 0
    cols = {c["name"]: c for c in json.loads(out.read_text())["columns"]}
    assert cols["zip"]["kind"] == "numeric" and cols["row"]["kind"] == "categorical"
    assert "score" not in cols
    assert infer(files / "table.csv", "--numeric", "sex") == 2
    assert "column 'sex' cannot be numeric" in capsys.readouterr().err
    assert infer(files / "table.csv", "--numeric", "zip", "--drop", "zip") == 2
    assert "chosen both" in capsys.readouterr().err
    # the next command it prints pastes as it is: names with spaces are quoted
    frame = pd.read_csv(files / "table.csv").rename(columns={"score": "test score"})
    frame.to_csv(files / "spaced.csv", index=False)
    assert infer(files / "spaced.csv", "--drop", "test score") == 0
    assert "--drop 'row,test score' --mechanism" in capsys.readouterr().err
    # a column the table lacks: the control named as the command line names it
    assert infer(files / "table.csv", "--categorical", "station") == 2
    err = capsys.readouterr().err
    assert "'station', chosen as a categorical column, is not a column of the table. " \
           "Correct --categorical station;" in err and "{" not in err


def test_a_date_column_is_left_out_with_what_to_do():
    """Dates were called an identifier, and the numeric kind it suggested refused them."""
    days = pd.date_range("2023-01-01", periods=150).strftime("%Y-%m-%d")
    frame = pd.DataFrame({"visit date": list(days) * 2, "g": ["a", "b", "c"] * 100})
    proposal = propose_schema(frame)
    assert "visit date" in proposal.drops
    # the control as the command line takes it: a name with a space is quoted
    assert proposal.notes("cli")["visit date"].startswith(
        "dates (such as 2023-05-13): a schema has no date kind, so it is left out "
        "(--drop 'visit date').")
    assert "leave out: dates" in proposal.table("cli").to_string()


def test_words_that_often_mean_missing_are_said_to_be_kept_as_categories():
    """'NA' cells became a category beside the missing code, without a word."""
    frame = pd.DataFrame({"clinic": ["East", "West", "NA", "", "East"] * 20,
                          "n": list(range(100))})
    frame["clinic"] = frame["clinic"].replace("", np.nan)
    notes = propose_schema(frame).notes("cli")
    assert notes["clinic"] == ("its categories include 'NA', kept as values (only empty cells "
                               "are missing values): if they mean missing, empty those cells.")


def test_a_column_whose_bounds_an_outlier_set_is_said_so_and_clip_declares_it(tmp_path,
                                                                              capsys):
    """One income of 1e9 among incomes in the tens of thousands put 399 of 400 rows
    in one of 32 bins, and schema infer said nothing."""
    rng = np.random.default_rng(0)
    income = np.round(rng.normal(40000, 9000, 400), 2)
    income[17] = 1e9
    pd.DataFrame({"income": income, "g": rng.integers(0, 3, 400)}).to_csv(
        tmp_path / "t.csv", index=False)
    out = tmp_path / "s.json"
    assert infer(tmp_path / "t.csv", "--out", out) == 0
    err = capsys.readouterr().err
    assert "income: 399 of its 400 values fall in one of its 32 bins" in err
    assert '"clip": true' in err
    schema = json.loads(out.read_text())
    column = next(c for c in schema["columns"] if c["name"] == "income")
    column.update(lower=0.0, upper=250000.0, clip=True)
    encoded = Schema.from_json({"columns": [column]}).encode(pd.read_csv(tmp_path / "t.csv"))
    assert encoded["income"][17] == 31 and encoded["income"].nunique() > 3


def test_a_public_split_fits_the_union_schema_and_private_values_are_named(files, capsys):
    out = files / "schema.json"
    code = subprocess.run([sys.executable, "-m", "synth_core.cli", "schema", "infer",
                           str(files / "private.csv"), "--public", str(files / "public.csv"),
                           "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert code.returncode == 0, code.stderr
    obj = json.loads(out.read_text())
    private, public = (pd.read_csv(files / f, dtype={"zip": str})
                       for f in ("private.csv", "public.csv"))
    only = obj["review"]["private_only_values"]
    # the zip codes seen in the private table only are listed, as written, and only those
    assert set(only["zip"]) == set(private["zip"]) - set(public["zip"]) != set()
    assert "from the private table only" in code.stderr
    assert "sex" not in obj["review"]["read_off_private"]  # both sexes are in the public rows
    # without the schema the run refuses the split and names the command that proposes one
    args = ["run", "--data", str(files / "private.csv"), "--public", str(files / "public.csv"),
            "--mechanism", "jam-pgm", *FAST, "--out", str(files / "s.csv"),
            "--report", str(files / "r.json")]
    assert main([*args, "--drop", "row"]) == 2
    assert "synth schema infer DATA --public PUBLIC" in capsys.readouterr().err
    # with it the run goes through
    assert main([*args, "--schema", str(out), "--drop", "row"]) == 0
    synthetic = pd.read_csv(files / "s.csv")
    assert list(synthetic.columns) == ["zip", "age", "income", "sex", "score"]


def test_public_rows_flagged_in_the_table_get_a_schema_the_flagged_run_takes(files, capsys):
    """--public-flag splits the table as 'synth run --public-flag' does: the flag
    column stays out of the schema, and the run command it proposes goes through."""
    df = pd.read_csv(files / "table.csv", dtype={"zip": str})
    df.assign(is_public=np.arange(len(df)) < 24).to_csv(files / "flagged.csv", index=False)
    out = files / "schema.json"
    assert infer(files / "flagged.csv", "--public-flag", "is_public", "--drop", "row",
                 "--out", out) == 0
    err = capsys.readouterr().err
    obj = json.loads(out.read_text())
    assert "is_public" not in {c["name"] for c in obj["columns"]}
    assert "sex" not in obj["review"]["read_off_private"]     # both sexes in the public rows
    assert "--public-flag is_public --schema" in err
    args = ["run", "--data", str(files / "flagged.csv"), "--public-flag", "is_public",
            "--mechanism", "jam-pgm", *FAST, "--out", str(files / "s.csv"),
            "--report", str(files / "r.json")]
    assert main([*args, "--drop", "row"]) == 2                # the domain off the public rows
    assert "--public-flag COLUMN for public rows flagged" in capsys.readouterr().err
    assert main([*args, "--schema", str(out), "--drop", "row"]) == 0
    with pytest.raises(SystemExit) as exited:                  # one source of public rows
        infer(files / "flagged.csv", "--public-flag", "is_public", "--public", files / "public.csv")
    assert exited.value.code == 2 and "not allowed with" in capsys.readouterr().err


def test_decimals_and_a_missing_code_seen_only_in_private_rows_are_named():
    """Synthetic numbers are written with the schema's decimals, and the missing code
    decodes to empty cells: either, read off the private rows alone, would show in a
    release, so the review names them like a private category or bound."""
    public = pd.DataFrame({"age": np.arange(20.0, 80.0, 2.5)})   # 1 decimal, no blanks
    inside = pd.DataFrame({"age": [21.5, 40.0, 66.5, 77.5]})     # the same precision
    sharper = pd.DataFrame({"age": [21.5, 30.123457, 66.5]})     # 6 decimals
    blank = pd.DataFrame({"age": [21.5, np.nan, 66.5]})          # an empty cell

    def flagged(private):
        proposal = propose_schema(private, public, numeric=["age"])
        return proposal.private_values.get("age", []), proposal.schema().columns[0]

    assert flagged(inside)[0] == []
    values, spec = flagged(sharper)
    assert values == ["6 decimals (the public rows have 1 decimal)"] and spec.decimals == 6
    values, spec = flagged(blank)
    assert values == ["a missing-value code (only the private rows have empty cells)"]
    assert spec.missing
    whole = pd.DataFrame({"age": np.arange(20.0, 80.0, 3.0)})
    assert propose_schema(sharper, whole, numeric=["age"]).private_values["age"] == [
        "6 decimals (the public rows have whole numbers)"]
    more = pd.DataFrame({"age": [21.5, 30.12345678]})
    assert propose_schema(more, public, numeric=["age"]).private_values["age"] == [
        "more than 6 decimals (the public rows have 1 decimal)"]


def test_a_kind_the_public_rows_alone_would_not_give_is_named():
    """helper-60: a column read as numeric because the private rows add distinct values
    the public rows lack (here 20 public values, all within the range) is a fact
    about the private table a released schema tells: the review names the kind."""
    public = pd.DataFrame({"score": np.tile(np.arange(0, 40, 2), 2)})  # 20 distinct values
    richer = pd.DataFrame({"score": np.tile(np.arange(0, 39), 3)})  # odd values too
    same = pd.DataFrame({"score": np.tile(np.arange(0, 40, 4), 3)})
    proposal = propose_schema(richer, public)
    assert proposal.schema().columns[0].kind == "numeric"
    assert proposal.private_values["score"] == [
        "the kind numeric (the public rows alone give categorical)"]
    assert proposal.read_off_private == ("score",) and proposal.schema().source == "private"
    assert propose_schema(same, public).private_values == {}
    # the caller's choice of kind is the caller's, not read off the data
    assert propose_schema(richer, public, numeric=["score"]).private_values == {}


# ---------------------------------------------------------------- synth run flags


def test_run_kind_flags_and_drop_alias(files, capsys):
    out, report = files / "s.csv", files / "r.json"
    base = ["run", "--data", str(files / "table.csv"), "--mechanism", "mwem-pgm", *FAST,
            "--out", str(out), "--report", str(report)]
    assert main([*base, "--categorical", "zip", "--numeric", "age", "--drop", "row"]) == 0
    err = capsys.readouterr().err
    synthetic = pd.read_csv(out, dtype={"zip": str})
    assert "row" not in synthetic.columns
    assert set(synthetic["zip"].dropna()) <= set(ZIPS)  # codes as written, zeros kept
    assert json.loads(report.read_text())["data"]["dropped_columns"] == ["row"]
    assert "identifier" not in err
    # the old spelling still works
    assert main([*base, "--drop-columns", "score,row"]) == 0
    assert pd.read_csv(out).columns.tolist() == ["zip", "age", "income", "sex"]


def test_run_warnings_name_the_flag_that_changes_a_column(files, capsys):
    assert main(["run", "--data", str(files / "table.csv"), "--mechanism", "mwem-pgm", *FAST,
                 "--out", str(files / "s.csv"), "--report", str(files / "r.json")]) == 0
    err = capsys.readouterr().err
    assert "column 'row'" in err and "--drop row" in err
    # integer ages read as one category per value
    ages = pd.read_csv(files / "table.csv")["age"].nunique()
    assert f"column 'age' becomes {ages} categories" in err and "--numeric age" in err
    # numbers with a few text cells become categories: said, with the way to numbers
    assert "column 'score' is synthesised as categories, because it mixes numbers" in err
    assert "choose --numeric score" in err


def test_kind_flags_need_a_domain_read_off_data(files, capsys):
    args = ["run", "--sample", "titanic", "--mechanism", "mwem-pgm", *FAST,
            "--out", str(files / "s.csv"), "--report", str(files / "r.json")]
    assert main([*args, "--numeric", "age"]) == 2
    assert "declared schema" in capsys.readouterr().err
    assert main(["run", "--data", str(files / "table.csv"), "--mechanism", "mwem-pgm", *FAST,
                 "--numeric", "nope", "--out", str(files / "s.csv"),
                 "--report", str(files / "r.json")]) == 2
    assert "'nope'" in capsys.readouterr().err


# ---------------------------------------------------------------- hints per front end


def test_hints_name_the_control_of_the_front_end(files, capsys):
    df = pd.DataFrame({"word": [f"w{i}" for i in range(150)] * 2})
    with pytest.raises(SynthError) as api:
        infer_schema(df, source="private")
    assert "categorical_columns=['word']" in str(api.value)
    assert "drop_columns=['word']" in str(api.value)
    assert "--drop word" in api.value.text("cli") and "--categorical word" in api.value.text("cli")
    assert "Data page" in api.value.text("app") and "--drop" not in api.value.text("app")
    rendered = render_controls('{"columns": [...]} {drop:a,b}', "cli")
    assert rendered == '{"columns": [...]} --drop a,b'
    path = files / "words.csv"
    df.assign(n=1).to_csv(path, index=False)
    assert main(["run", "--data", str(path), "--out", str(files / "s.csv"),
                 "--report", str(files / "r.json"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--categorical word" in err and "numeric_columns" not in err


# ---------------------------------------------------------------- precision


def test_numeric_columns_decode_at_the_data_precision():
    spec = ColumnSpec("x", "numeric", lower=0.05, upper=99.95, bins=7, integer=False, decimals=2)
    schema = Schema((spec,))
    codes = pd.DataFrame({"x": np.arange(7).repeat(300)})
    values = schema.decode(codes, np.random.default_rng(0))["x"].to_numpy()
    assert np.all(np.round(values, 2) == values)                  # 2 decimals at most
    assert np.array_equal(schema.encode(pd.DataFrame({"x": values}))["x"], codes["x"])
    assert len(np.unique(values)) > 100                           # still spread in every bin
    # a bin narrower than the precision keeps the real draw inside it
    narrow = Schema((ColumnSpec("x", "numeric", lower=0.0, upper=0.001, bins=2, integer=False,
                                decimals=2),))
    drawn = narrow.decode(pd.DataFrame({"x": [0, 1] * 50}), np.random.default_rng(1))
    assert np.array_equal(narrow.encode(drawn)["x"], np.array([0, 1] * 50))


def test_decimals_are_read_off_the_data_and_checked():
    schema = infer_schema(pd.DataFrame({"p": np.round(np.linspace(0, 10, 150), 1)}),
                          source="public")
    assert schema.column("p").decimals == 1
    assert infer_schema(pd.DataFrame({"p": np.linspace(0, 1, 150) / 3}),
                        source="public").column("p").decimals is None
    # decimals on whole bounds make the column not integer; on an integer column, refused
    assert not ColumnSpec("i", "numeric", lower=0, upper=100, decimals=1).integer
    with pytest.raises(Exception, match="decimals"):
        ColumnSpec("i", "numeric", lower=0, upper=100, decimals=1, integer=True)
    with pytest.raises(Exception, match="decimals"):
        ColumnSpec("c", "categorical", categories=("a",), decimals=1)


def test_written_synthetic_numbers_have_the_data_precision(files):
    out = files / "s.csv"
    assert main(["run", "--data", str(files / "table.csv"), "--mechanism", "mwem-pgm", *FAST,
                 "--drop", "row", "--out", str(out), "--report", str(files / "r.json")]) == 0
    lines = out.read_text().splitlines()
    header = lines[0].split(",")
    cells = [line.split(",") for line in lines[1:]]
    income = [c[header.index("income")] for c in cells]
    age = [c[header.index("age")] for c in cells if c[header.index("age")]]
    assert all(len(v.split(".")[1]) <= 2 for v in income if "." in v)
    assert age and all(v.isdigit() for v in age)                  # integers stay integers


# ---------------------------------------------------------------- proposal details


def test_proposal_identifiers_need_enough_rows_and_floats_are_not_identifiers():
    small = pd.DataFrame({"id": range(5), "x": ["a", "b", "a", "b", "a"]})
    assert propose_schema(small).drops == ()
    floats = pd.DataFrame({"w": np.random.default_rng(0).normal(size=200)})
    proposal = propose_schema(floats)
    assert proposal.drops == () and proposal.decision("w").spec.kind == "numeric"
    text = pd.DataFrame({"name": [f"person {i}" for i in range(50)]})
    assert propose_schema(text).drops == ("name",)


def test_free_text_chosen_categorical_is_named_as_one_category_per_record():
    """Keeping a free-text column as categories is the caller's choice, but its category
    list is nearly every record's value: the decision says so, with the control that
    leaves it out, and the review block lists it; ordinary categorical choices do not."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"note": [f"blue blue {i}" for i in range(399)] + ["blue blue 1"],
                       "sex": rng.choice(["F", "M"], 400),
                       "age": rng.integers(18, 80, 400)})
    proposal = propose_schema(df, categorical=["note", "age"])
    assert proposal.one_per_record == ("note",)
    note = proposal.notes("cli")["note"]
    assert "399 categories for 400 rows" in note and "--drop note" in note
    assert "age" not in proposal.notes("cli")
    assert proposal.to_json()["review"]["one_category_per_record"] == ["note"]
    assert propose_schema(df).one_per_record == ()      # left out as an identifier instead


def test_fixed_width_codes_are_flagged_and_quantities_are_not():
    rng = np.random.default_rng(0)
    codes = pd.DataFrame({"station": rng.choice(np.arange(100, 999, 7), 400),
                          "height": rng.integers(40, 220, 400)})
    proposal = propose_schema(codes)
    assert proposal.codes == ("station",)
    assert proposal.decision("height").spec.kind == "numeric"


def test_a_run_domain_with_choices_reads_flagged_public_rows():
    from synth_core.schema_infer import domain_with_choices, leading_zero_columns

    df = raw_table().assign(is_public=lambda d: np.arange(len(d)) % 5 == 0)
    schema = domain_with_choices(df, flag="is_public", drop=("row", "score"),
                                 numeric=("age",), categorical=("zip",))
    assert schema.source == "public" and schema.names == ("zip", "age", "income", "sex")
    public_zips = set(df.loc[df.is_public, "zip"])
    assert set(schema.column("zip").categories) == public_zips
    assert schema.column("age").kind == "numeric"
    text = pd.DataFrame({"zip": ["02134", "10001"], "n": ["7", "12"], "w": ["a", "0b"]})
    assert leading_zero_columns(text) == ("zip",)


# ---------------------------------------------------------------- codes as written


def write_codes_csv(path: Path, n: int = 150) -> list[str]:
    """A CSV whose zip codes are written with leading zeros (one row's zip
    blank, with spaces around another), a whole-number 'count' column without
    zeros and a float column; returns the written zip set."""
    zips = ["02134", "10001", "00501"]
    rng = np.random.default_rng(3)
    lines = ["id,zip,count,share"]
    for i in range(n):
        zip_ = "" if i == 7 else f" {zips[i % 3]} " if i == 8 else zips[i % 3]
        lines.append(f"{i},{zip_},{rng.integers(1, 9)},{rng.random():.2f}")
    path.write_text("\n".join(lines) + "\n")
    return zips


def test_the_loader_keeps_codes_written_with_leading_zeros(tmp_path):
    from synth_core.tables import load_table

    zips = write_codes_csv(tmp_path / "codes.csv")
    df = load_table(tmp_path / "codes.csv")
    assert set(df["zip"].dropna()) == set(zips)          # text, stripped, zeros kept
    assert df["zip"].isna().sum() == 1                    # the blank cell is missing
    # whole numbers without leading zeros and real numbers stay numbers
    assert pd.api.types.is_integer_dtype(df["count"]) and pd.api.types.is_integer_dtype(df["id"])
    assert pd.api.types.is_float_dtype(df["share"])
    # a schema written with number categories still encodes the written codes
    spec = ColumnSpec("zip", "categorical", categories=(501, 2134, 10001), missing=True)
    codes = Schema((spec,), source="declared").encode(df[["zip"]])
    assert sorted(set(codes["zip"])) == [0, 1, 2, 3]


def test_codes_with_leading_zeros_come_back_as_written(tmp_path, capsys):
    zips = write_codes_csv(tmp_path / "codes.csv")
    schema = tmp_path / "schema.json"
    assert infer(tmp_path / "codes.csv", "--out", schema) == 0
    cols = {c["name"]: c for c in json.loads(schema.read_text())["columns"]}
    assert cols["zip"]["categories"] == sorted(zips) and cols["zip"]["missing"] is True
    assert "id" not in cols
    out = tmp_path / "synthetic.csv"
    assert main(["run", "--data", str(tmp_path / "codes.csv"), "--schema", str(schema),
                 "--drop", "id", "--mechanism", "mwem-pgm", "--epsilon", "2", *FAST,
                 "--out", str(out), "--report", str(tmp_path / "r.json")]) == 0
    written = pd.read_csv(out, dtype=str, keep_default_na=False)["zip"]
    assert set(written) - {""} <= set(zips)
    assert {"02134", "00501"} & set(written)             # the zeros reach the file


def test_the_leading_zero_scan_sees_a_code_split_between_chunks(tmp_path):
    from synth_core.tables import _CHUNK, _has_leading_zero_field

    def scan(head: bytes, tail: bytes) -> bool:
        """The scan of a file whose first 1 MB chunk ends with ``head``."""
        path = tmp_path / "split.csv"
        path.write_bytes(b"y" * (_CHUNK - len(head)) + head + tail + b",1.05,100\n")
        return _has_leading_zero_field(path, "split.csv")

    assert scan(b",0", b"5")            # ",05": the 0 ends one chunk, the 5 starts the next
    assert not scan(b",1", b"05")       # "105": no leading zero
    assert not scan(b",0.", b"5")       # "0.5": a real number


def test_codes_that_lost_their_zeros_are_named_against_a_written_schema():
    spec = ColumnSpec("zip", "categorical", categories=("00501", "02134", "10001"))
    schema = Schema((spec,), source="declared")
    with pytest.raises(SynthError) as err:
        schema.encode(pd.DataFrame({"zip": [2134, 10001, 2134]}))
    text = str(err.value)
    assert "values not in the schema" in text and "leading zeros ('02134')" in text
    with pytest.raises(SynthError) as err:                     # other unknown codes: no such note
        schema.encode(pd.DataFrame({"zip": [2135, 10001]}))
    assert "leading zeros" not in str(err.value)
