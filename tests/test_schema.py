"""Tests of synth_core.schema: domains, encoding, decoding, JSON, inference."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synth_core.errors import DataError, SchemaError
from synth_core.schema import (DEFAULT_BINS, MISSING_LABEL, ColumnSpec, Schema,
                               infer_schema, load_schema)

EXAMPLE = {"columns": [
    {"name": "age", "kind": "numeric", "lower": 17, "upper": 90, "bins": 32, "missing": False},
    {"name": "workclass", "kind": "categorical", "categories": ["Federal-gov", "Local-gov"],
     "missing": True},
]}
SHARED_ADULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "adult"


def example_schema() -> Schema:
    return Schema.from_json(EXAMPLE)


def numeric(lower=0, upper=32, bins=32, **kw) -> ColumnSpec:
    return ColumnSpec("x", "numeric", lower=lower, upper=upper, bins=bins, **kw)


# ---------------------------------------------------------------- strategies

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Zs", "Cc")),
                min_size=1, max_size=8)
texts = st.text(min_size=1, max_size=6).filter(lambda t: t.strip() != "")


@st.composite
def column_specs(draw, name):
    kind = draw(st.sampled_from(["text", "int", "float", "numeric-int", "numeric-float"]))
    missing = draw(st.booleans())
    if kind == "text":
        cats = draw(st.lists(texts, min_size=1, max_size=6, unique=True))
        return ColumnSpec(name, "categorical", categories=tuple(cats), missing=missing)
    if kind == "int":
        cats = draw(st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=6, unique=True))
        return ColumnSpec(name, "categorical", categories=tuple(cats), missing=missing)
    if kind == "float":
        cats = draw(st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=1, max_size=6,
                             unique=True))
        return ColumnSpec(name, "categorical", categories=tuple(cats), missing=missing)
    bins = draw(st.integers(1, 64))
    if kind == "numeric-int":
        lower = draw(st.integers(-10**6, 10**6))
        upper = lower + draw(st.integers(1, 10**5))
    else:
        lower = draw(st.floats(-1e6, 1e6))
        upper = lower + draw(st.floats(1e-3, 1e6))
    return ColumnSpec(name, "numeric", lower=lower, upper=upper, bins=bins, missing=missing)


@st.composite
def schemas(draw):
    col_names = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    return Schema(tuple(draw(column_specs(n)) for n in col_names),
                  source=draw(st.sampled_from(["declared", "public", "private"])))


@st.composite
def schema_and_codes(draw):
    schema = draw(schemas())
    n = draw(st.integers(0, 25))
    codes = {c.name: draw(st.lists(st.integers(0, c.size - 1), min_size=n, max_size=n))
             for c in schema.columns}
    return schema, pd.DataFrame(codes, columns=list(schema.names), dtype=np.int64)


# ---------------------------------------------------------------- round trips


@settings(max_examples=300, deadline=None)
@given(schema_and_codes(), st.integers(0, 2**32 - 1))
def test_encode_decode_round_trip(case, seed):
    schema, codes = case
    values = schema.decode(codes, np.random.default_rng(seed))
    assert list(values.columns) == list(schema.names)
    again = schema.encode(values)
    assert (again.dtypes == np.int64).all()
    pd.testing.assert_frame_equal(again, codes)


@settings(max_examples=200, deadline=None)
@given(schemas())
def test_json_round_trip(schema):
    text = json.dumps(schema.to_json())
    again = Schema.from_json(json.loads(text), source=schema.source)
    assert again == schema


def test_to_json_is_the_documented_format():
    assert example_schema().to_json() == EXAMPLE


def test_to_json_records_integer_only_when_not_inferred():
    col = numeric(lower=0, upper=100, bins=10, integer=False)
    assert col.to_json()["integer"] is False
    assert ColumnSpec.from_json(col.to_json()) == col
    assert "integer" not in numeric(lower=0, upper=100, bins=10).to_json()


# ---------------------------------------------------------------- numeric bins


def test_numeric_bin_edges():
    schema = Schema((numeric(lower=0, upper=10, bins=4),))
    x = [0, 2.4999, 2.5, 7.5, np.nextafter(10, 0), 10]
    codes = schema.encode(pd.DataFrame({"x": x}))["x"].tolist()
    assert codes == [0, 0, 1, 3, 3, 3]


def test_bins_are_bounded_before_their_edges_are_made():
    """A hand-written 1e9 bins would allocate 8 GB of edges (and grow from there):
    refused with what to do, at once; the bound itself is accepted."""
    import resource
    from synth_core.schema import MAX_BINS
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(SchemaError, match="at most 100,000 bins"):
        ColumnSpec("age", "numeric", lower=0, upper=100, bins=1_000_000_000)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000   # KB
    assert ColumnSpec("age", "numeric", lower=0, upper=1e9, bins=MAX_BINS).size == MAX_BINS


def test_numeric_defaults_to_32_bins():
    col = ColumnSpec("age", "numeric", lower=17, upper=90)
    assert col.bins == DEFAULT_BINS == 32
    assert col.size == 32


def test_decode_numeric_lands_inside_its_bin():
    col = numeric(lower=-1.5, upper=2.5, bins=8)
    schema = Schema((col,))
    codes = pd.DataFrame({"x": np.repeat(np.arange(8), 200)})
    values = schema.decode(codes, np.random.default_rng(1))["x"].to_numpy()
    edges = col.bin_edges()
    k = codes["x"].to_numpy()
    assert values.dtype == np.float64
    assert np.all(edges[k] <= values)
    assert np.all(values[k < 7] < edges[k + 1][k < 7])
    assert np.all(values <= 2.5)
    assert len(np.unique(values)) > 1000  # uniform draws, not bin midpoints


def test_integer_column_decodes_to_whole_numbers_in_the_bin():
    col = ColumnSpec("age", "numeric", lower=17, upper=90, bins=32)
    assert col.integer is True
    schema = Schema((col,))
    codes = pd.DataFrame({"age": np.repeat(np.arange(32), 50)})
    values = schema.decode(codes, np.random.default_rng(2))["age"]
    assert values.dtype == np.int64
    edges = col.bin_edges()
    k = codes["age"].to_numpy()
    assert np.all((edges[k] <= values) & (values <= edges[k + 1]))
    assert values.min() >= 17 and values.max() <= 90
    assert 90 in set(values)  # the closed last bin reaches the upper bound


def test_integer_column_with_missing_is_nullable_int():
    col = ColumnSpec("n", "numeric", lower=0, upper=10, bins=5, missing=True)
    out = Schema((col,)).decode(pd.DataFrame({"n": [0, 5, 4]}), np.random.default_rng(0))["n"]
    assert str(out.dtype) == "Int64"
    assert out.isna().tolist() == [False, True, False]


@pytest.mark.parametrize("spec, expected", [
    (dict(lower=17, upper=90, bins=32), True),
    (dict(lower=17.0, upper=90.0, bins=32), False),   # float bounds: a continuous column
    (dict(lower=0, upper=10, bins=32), False),        # bins narrower than 1
    (dict(lower=0, upper=10, bins=10), True),
    (dict(lower=0, upper=10, bins=32, integer=False), False),
])
def test_integer_is_inferred_from_bounds(spec, expected):
    assert ColumnSpec("x", "numeric", **spec).integer is expected


def test_integer_true_needs_a_whole_number_in_every_bin():
    with pytest.raises(SchemaError, match="column 'x': integer: true needs a whole number"):
        numeric(lower=0, upper=10, bins=32, integer=True)


# ---------------------------------------------------------------- missing values


def test_missing_values_get_the_last_code():
    schema = example_schema()
    df = pd.DataFrame({"age": [17, 90, 50],
                       "workclass": ["Local-gov", None, ""]})
    codes = schema.encode(df)
    assert codes["workclass"].tolist() == [1, 2, 2]
    assert schema.column("workclass").size == 3
    assert schema.column("workclass").missing_code == 2
    decoded = schema.decode(codes, np.random.default_rng(0))
    assert decoded["workclass"].tolist()[0] == "Local-gov"
    assert decoded["workclass"].isna().tolist() == [False, True, True]


def test_numeric_missing_code_and_nan():
    schema = Schema((numeric(lower=0.0, upper=1.0, bins=4, missing=True),))
    codes = schema.encode(pd.DataFrame({"x": [0.1, np.nan, None, 1.0]}))["x"].tolist()
    assert codes == [0, 4, 4, 3]
    out = schema.decode(pd.DataFrame({"x": [4, 0]}), np.random.default_rng(0))["x"]
    assert np.isnan(out[0]) and 0 <= out[1] < 0.25


def test_missing_value_without_missing_code_is_an_error():
    schema = Schema((ColumnSpec("sex", "categorical", categories=("F", "M")),))
    with pytest.raises(DataError) as err:
        schema.encode(pd.DataFrame({"sex": ["F", None, "", "M"]}), table_name="people.csv")
    message = str(err.value)
    assert "table 'people.csv'" in message
    assert "column 'sex' has missing values (empty cells) in 2 rows" in message
    assert "set missing: true" in message.lower()
    assert err.value.column == "sex"


# ---------------------------------------------------------------- matching values


def test_categorical_matches_numbers_against_text_categories():
    schema = Schema((ColumnSpec("c", "categorical", categories=("1", "2", "10"), missing=True),))
    as_int = pd.DataFrame({"c": [1, 2, 10]})
    as_float = pd.DataFrame({"c": [1.0, np.nan, 10.0]})  # ints read with an empty cell
    assert schema.encode(as_int)["c"].tolist() == [0, 1, 2]
    assert schema.encode(as_float)["c"].tolist() == [0, 3, 2]


def test_categorical_matches_text_against_number_categories():
    schema = Schema((ColumnSpec("c", "categorical", categories=(0, 1, 2)),))
    df = pd.DataFrame({"c": ["2", " 0 ", "1.0"]})
    assert schema.encode(df)["c"].tolist() == [2, 0, 1]


def test_categorical_matches_bools_against_true_false_text():
    schema = Schema((ColumnSpec("b", "categorical", categories=("false", "true")),))
    assert schema.encode(pd.DataFrame({"b": [True, False]}))["b"].tolist() == [1, 0]


def test_a_true_false_column_decodes_to_booleans_again():
    """A boolean column came back as the text "True"/"False": (synthetic.flag == True)
    counted none of them."""
    spec = ColumnSpec("flag", "categorical", categories=("False", "True"))
    schema = Schema((spec, ColumnSpec("f2", "categorical", categories=("False", "True"),
                                      missing=True)))
    frame = pd.DataFrame({"flag": [True, False, True],
                          "f2": pd.array([True, None, False], dtype="boolean")})
    decoded = schema.decode(schema.encode(frame), np.random.default_rng(0))
    assert decoded["flag"].dtype == bool and decoded["flag"].tolist() == [True, False, True]
    assert str(decoded["f2"].dtype) == "boolean" and decoded["f2"].isna().tolist() == \
        [False, True, False]
    assert (decoded["flag"] == True).sum() == 2                         # noqa: E712
    assert schema.encode(decoded).equals(schema.encode(frame))          # and back


def test_encode_keeps_schema_order_and_ignores_extra_columns():
    schema = example_schema()
    df = pd.DataFrame({"extra": [1], "workclass": ["Federal-gov"], "age": [90]})
    codes = schema.encode(df)
    assert list(codes.columns) == ["age", "workclass"]
    assert codes.iloc[0].tolist() == [31, 0]


def test_a_clipped_column_puts_values_past_its_bounds_in_its_end_bins():
    """One income of 1e9 stretched the inferred bins so 399 of 400 rows shared one;
    with public bounds and clip, extreme values land in the first or last bin."""
    spec = {"name": "income", "kind": "numeric", "lower": 0, "upper": 250000, "bins": 5}
    values = pd.DataFrame({"income": [-20.0, 0, 120000, 250000, 1e9, np.nan]})
    with pytest.raises(DataError, match=r'set "clip": true on the column'):
        Schema.from_json({"columns": [dict(spec, missing=True)]}).encode(values)
    clipped = Schema.from_json({"columns": [dict(spec, missing=True, clip=True)]})
    assert clipped.encode(values)["income"].tolist() == [0, 0, 2, 4, 4, 5]
    assert clipped.to_json()["columns"][0]["clip"] is True
    assert "clip" not in Schema.from_json({"columns": [spec]}).to_json()["columns"][0]
    with pytest.raises(DataError, match="infinite values"):   # infinities still do not fit
        clipped.encode(pd.DataFrame({"income": [np.inf]}))
    with pytest.raises(SchemaError, match="unknown key.*'clip' for a categorical column"):
        Schema.from_json({"columns": [{"name": "c", "kind": "categorical",
                                       "categories": ["a"], "clip": True}]})
    with pytest.raises(SchemaError, match="'clip' applies to numeric columns only"):
        ColumnSpec("c", "categorical", categories=("a",), clip=True)


def test_the_schema_files_example_in_the_docs_loads():
    """docs/schema.md's example: its income column has whole bounds and decimals,
    which was refused (whole bounds made it integer)."""
    import re
    text = (Path(__file__).resolve().parents[1] / "docs" / "schema.md").read_text()
    schema = Schema.from_json(json.loads(re.search(r"```json\n(.*?)```", text, re.S).group(1)))
    income = schema.column("income")
    assert (income.integer, income.decimals) == (False, 2)
    assert Schema.from_json(schema.to_json()) == schema


# ---------------------------------------------------------------- encode errors


def test_unknown_category_error_names_table_column_rows_and_values():
    schema = Schema((ColumnSpec("sex", "categorical", categories=("Female", "Male")),))
    df = pd.DataFrame({"sex": ["F"] * 12 + ["X"] + ["Male"]})
    with pytest.raises(DataError) as err:
        schema.check_fits(df, "pub.csv", role="public table")
    assert str(err.value).startswith(
        "public table 'pub.csv': column 'sex' has values not in the schema: "
        "'F' (12 rows), 'X' (1 row).")
    assert "Add them to the column's categories" in str(err.value)


def test_many_unknown_values_are_summarised():
    schema = Schema((ColumnSpec("c", "categorical", categories=("a",)),))
    df = pd.DataFrame({"c": [f"v{i}" for i in range(20)]})
    with pytest.raises(DataError, match=r"and 15 more values \(20 rows in all\)"):
        schema.encode(df)


def test_numeric_out_of_bounds_says_widen_the_bounds():
    schema = example_schema()
    df = pd.DataFrame({"age": [16, 95, 95, 40], "workclass": ["Local-gov"] * 4})
    with pytest.raises(DataError) as err:
        schema.encode(df, table_name="adult.csv")
    message = str(err.value)
    assert "table 'adult.csv': column 'age' has values outside the bounds [17, 90]" in message
    assert "95 (2 rows), 16 (1 row)" in message
    assert "Widen the bounds" in message


def test_non_numeric_text_and_infinity_in_numeric_column():
    schema = Schema((numeric(lower=0, upper=10),))
    df = pd.DataFrame({"x": ["1", "abc", "inf", "abc"]})
    with pytest.raises(DataError) as err:
        schema.encode(df)
    message = str(err.value)
    assert "(2 problems)" in message
    assert "column 'x' is numeric but has non-numeric values: 'abc' (2 rows)" in message
    assert "column 'x' has infinite values in 1 row" in message


def test_missing_schema_columns_are_named():
    with pytest.raises(DataError) as err:
        example_schema().check_fits(pd.DataFrame({"Age": [20]}), "pub.csv")
    message = str(err.value)
    assert "table 'pub.csv' is missing schema column(s) 'age', 'workclass'" in message
    assert "Its columns are: 'Age'" in message


def test_decode_rejects_codes_out_of_range():
    with pytest.raises(DataError, match=r"column 'workclass' must lie in 0\.\.2, found 0\.\.3"):
        example_schema().decode(pd.DataFrame({"age": [0, 1], "workclass": [0, 3]}),
                                np.random.default_rng(0))


# ---------------------------------------------------------------- labels, lookups


def test_labels():
    schema = example_schema()
    assert schema.column("workclass").labels() == ["Federal-gov", "Local-gov", MISSING_LABEL]
    assert numeric(lower=0, upper=10, bins=4, integer=False).labels() == [
        "[0, 2.5)", "[2.5, 5)", "[5, 7.5)", "[7.5, 10]"]
    # an integer column's bins are labelled by the whole numbers they hold: each
    # value encodes to the bin whose label names it, and decodes back into it
    column = numeric(lower=0, upper=10, bins=4)
    assert column.integer and column.labels() == ["0–2", "3–4", "5–7", "8–10"]
    one = Schema((column,), source="declared")
    codes = one.encode(pd.DataFrame({"x": range(11)}))["x"]
    assert [column.labels()[c] for c in codes] == ["0–2"] * 3 + ["3–4"] * 2 + ["5–7"] * 3 \
        + ["8–10"] * 3
    decoded = one.decode(pd.DataFrame({"x": np.repeat(np.arange(4), 50)}),
                         np.random.default_rng(0))["x"]
    assert set(decoded[:50]) <= {0, 1, 2} and set(decoded[50:100]) <= {3, 4}
    assert numeric(lower=-3, upper=4, bins=2).labels() == ["-3 to 0", "1 to 4"]
    assert numeric(lower=0, upper=3, bins=4).labels() == ["0", "1", "2", "3"]
    ages = schema.column("age").labels()
    assert len(ages) == 32 and ages[0] == "17–19" and ages[-1] == "88–90"


def test_names_sizes_and_project():
    schema = example_schema()
    assert schema.names == ("age", "workclass")
    assert schema.sizes == {"age": 32, "workclass": 3}
    projected = schema.project(["workclass"])
    assert projected.names == ("workclass",) and projected.source == "declared"
    with pytest.raises(SchemaError, match="unknown column 'sex'.*Known columns: 'age', 'workclass'"):
        schema.project(["sex"])


def test_unknown_column_lists_known_ones():
    with pytest.raises(SchemaError) as err:
        example_schema().column("Age")
    assert "unknown column 'Age'" in str(err.value)
    assert "'age', 'workclass'" in str(err.value)


@pytest.mark.parametrize("source, protected", [
    ("declared", True), ("public", True), ("private", False)])
def test_domain_protected(source, protected):
    assert Schema.from_json(EXAMPLE, source=source).domain_protected is protected


# ---------------------------------------------------------------- JSON validation


def test_private_pgm_domain_format():
    schema = Schema.from_json({"age": 32, "sex": 2})
    assert schema.source == "declared"
    assert schema.sizes == {"age": 32, "sex": 2}
    assert schema.column("sex").categories == (0, 1)
    codes = schema.encode(pd.DataFrame({"sex": [1, 0], "age": [31, 0]}))
    assert codes.to_dict("list") == {"age": [31, 0], "sex": [1, 0]}


@pytest.mark.skipif(not SHARED_ADULT.exists(), reason="benchmark data ../shared/data is absent")
def test_benchmark_domain_encodes_benchmark_data_unchanged():
    schema = load_schema(SHARED_ADULT / "domain.json")
    df = pd.read_csv(SHARED_ADULT / "adult.csv")
    codes = schema.encode(df)
    assert (codes.to_numpy() == df[list(schema.names)].to_numpy()).all()


@pytest.mark.parametrize("obj, expected", [
    ({"columns": [{"name": "a", "kind": "text", "categories": ["x"]}]},
     "column 'a': unknown kind 'text'"),
    ({"columns": [{"name": "a", "kind": "categorical", "categories": []}]},
     "column 'a': the list of categories is empty"),
    ({"columns": [{"name": "a", "kind": "categorical", "categories": ["x", "y", "x"]}]},
     "column 'a': duplicate categories: 'x'"),
    ({"columns": [{"name": "a", "kind": "categorical", "categories": [1, 1.0]}]},
     "column 'a': duplicate categories: 1"),
    ({"columns": [{"name": "a", "kind": "categorical", "categories": [1, "x"]}]},
     "column 'a': categories must be all text or all numbers"),
    ({"columns": [{"name": "a", "kind": "categorical", "categories": ["x", " "]}]},
     "column 'a': empty categories are not allowed"),
    ({"columns": [{"name": "a", "kind": "categorical", "categories": ["x"]},
                  {"name": "a", "kind": "categorical", "categories": ["y"]}]},
     "duplicate column names in the schema: 'a'"),
    ({"columns": [{"name": "a", "kind": "numeric", "lower": 5, "upper": 5}]},
     r"column 'a': lower \(5\) must be less than upper \(5\)"),
    ({"columns": [{"name": "a", "kind": "numeric", "lower": 0, "upper": 5, "bins": 0}]},
     "column 'a': 'bins' must be a whole number of at least 1, not 0"),
    ({"columns": [{"name": "a", "kind": "numeric", "lower": 0, "upper": 5, "bins": 2.5}]},
     "column 'a': 'bins' must be a whole number"),
    ({"columns": [{"name": "a", "kind": "numeric", "upper": 5}]},
     "column 'a': a numeric column needs 'lower'"),
    ({"columns": [{"name": "a", "kind": "numeric", "lower": "0", "upper": 5}]},
     "column 'a': 'lower' must be a finite number"),
    ({"columns": [{"name": "a", "kind": "categorical", "catgories": ["x"]}]},
     "column 'a': unknown key\\(s\\) 'catgories'"),
    ({"columns": [{"name": "a", "kind": "categorical", "categories": ["x"], "bins": 3}]},
     "column 'a': unknown key\\(s\\) 'bins'"),
    ({"columns": [{"name": "a", "kind": "categorical", "categories": ["x"], "missing": "yes"}]},
     "column 'a': 'missing' must be true or false"),
    ({"columns": [{"kind": "categorical", "categories": ["x"]}]}, "a column has no 'name'"),
    ({"columns": [{"name": " a", "kind": "categorical", "categories": ["x"]}]},
     "column name ' a' has leading or trailing spaces"),
    ({"columns": []}, "the schema has no columns"),
    ({"age": 32, "sex": 2.5}, "column 'sex': a Private-PGM domain gives each column"),
    ({"age": 0}, "column 'age': a Private-PGM domain"),
    ({"age": "32"}, "column 'age': a Private-PGM domain"),
    ({"age": True}, "column 'age': a Private-PGM domain"),
    ([1, 2], "a schema must be a JSON object"),
])
def test_from_json_validation(obj, expected):
    with pytest.raises(SchemaError, match=expected):
        Schema.from_json(obj)


def test_validation_error_carries_the_column():
    with pytest.raises(SchemaError) as err:
        Schema.from_json({"columns": [{"name": "a", "kind": "numeric", "lower": 1, "upper": 0}]})
    assert err.value.column == "a"


def test_pgm_domain_accepts_whole_float_sizes():
    assert Schema.from_json({"age": 32.0}).sizes == {"age": 32}


# ---------------------------------------------------------------- schema files


def test_load_schema_both_formats(tmp_path):
    declared = tmp_path / "schema.json"
    declared.write_text(json.dumps(EXAMPLE))
    assert load_schema(declared) == example_schema()
    domain = tmp_path / "domain.json"
    domain.write_text('{"age": 32, "sex": 2}')
    schema = load_schema(domain)
    assert schema.sizes == {"age": 32, "sex": 2} and schema.source == "declared"


def test_load_schema_invalid_json_names_file_and_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"columns": [\n  {"name": "a",}\n]}')
    with pytest.raises(SchemaError) as err:
        load_schema(path)
    assert f"schema file '{path}' is not valid JSON" in str(err.value)
    assert "line 2" in str(err.value)
    assert err.value.path == str(path)


def test_load_schema_structure_error_names_file_and_column(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"columns": [{"name": "age", "kind": "numeric", "lower": 9, "upper": 1}]}')
    with pytest.raises(SchemaError, match=r"schema file '.*bad\.json': column 'age': lower"):
        load_schema(path)


def test_load_schema_missing_file(tmp_path):
    with pytest.raises(SchemaError, match="schema file '.*nope.json' not found"):
        load_schema(tmp_path / "nope.json")


# ---------------------------------------------------------------- inference


def test_infer_schema_kinds_bounds_missing_and_source():
    df = pd.DataFrame({
        "id": np.arange(500),                                 # many ints -> numeric
        "score": np.linspace(-1.5, 2.5, 500),                 # many floats -> numeric
        "colour": ["red", "blue", None, "green", ""] * 100,   # text with missing
        "kids": [0, 1, 2, 3, np.nan] * 100,                   # few numbers -> categorical
    })
    schema = infer_schema(df, source="private", bins=16)
    assert schema.source == "private" and not schema.domain_protected
    ident = schema.column("id")
    assert (ident.kind, ident.lower, ident.upper, ident.bins, ident.integer) == (
        "numeric", 0, 499, 16, True)
    score = schema.column("score")
    assert (score.kind, score.lower, score.upper, score.integer) == ("numeric", -1.5, 2.5, False)
    assert schema.column("colour").categories == ("blue", "green", "red")
    assert schema.column("colour").missing is True
    assert schema.column("kids").categories == (0, 1, 2, 3)
    assert schema.column("kids").missing is True
    assert schema.column("id").missing is False
    schema.encode(df)  # the data fits its own inferred schema


def test_infer_schema_public_source():
    schema = infer_schema(pd.DataFrame({"a": ["x", "y"]}), source="public")
    assert schema.source == "public" and schema.domain_protected


def test_infer_schema_too_many_categories():
    df = pd.DataFrame({"name": [f"person {i}" for i in range(250)]})
    with pytest.raises(SchemaError) as err:
        infer_schema(df, source="public")
    message = str(err.value)
    assert "column 'name' has 250 distinct values, more than max_categories=100" in message
    assert "categorical_columns=['name']" in message and "drop_columns=['name']" in message
    assert "numeric" not in message  # names are no numbers


def test_infer_schema_points_at_text_in_a_numeric_looking_column():
    df = pd.DataFrame({"hours": [str(i) for i in range(150)] + ["?"] * 3})
    with pytest.raises(SchemaError, match=r"looks numeric but has non-numeric cells '\?' \(3 rows\)"):
        infer_schema(df, source="private")


def test_infer_schema_numeric_columns_and_max_categories():
    df = pd.DataFrame({"age": [20, 30, 40, 30], "code": ["a", "b", "c", "a"]})
    schema = infer_schema(df, source="public", numeric_columns=["age"], bins=4)
    assert schema.column("age").kind == "numeric"
    assert (schema.column("age").lower, schema.column("age").upper) == (20, 40)
    with pytest.raises(SchemaError, match="has 3 distinct values, more than max_categories=2"):
        infer_schema(df, source="public", max_categories=2)
    with pytest.raises(SchemaError, match="unknown column\\(s\\) 'Age'"):
        infer_schema(df, source="public", numeric_columns=["Age"])


def test_infer_schema_empty_table():
    with pytest.raises(DataError, match="empty table"):
        infer_schema(pd.DataFrame({"a": []}), source="private")


def test_infer_schema_rejects_declared_source():
    with pytest.raises(SchemaError, match="'public' or 'private'"):
        infer_schema(pd.DataFrame({"a": [1]}), source="declared")
