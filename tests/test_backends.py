"""Counting backends: DuckDB and Spark count exactly what the numpy backend counts.

The engine backends encode raw values in SQL generated from the schema; these
tests compare every 1-, 2- and 3-way marginal with the in-memory CodedTable
(``Schema.encode`` + ``np.bincount``) on the bundled samples (missing values,
numeric binning, text categories) and on a table of edge cases, in CSV and
Parquet; then run the CLI end to end with ``--backend duckdb``.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from synth_core import Synthesizer
from synth_core.api import SAMPLE_DIR, prepare_inputs
from synth_core.backends import CountingBackend, make_backend, open_backend
from synth_core.cli import main as cli_main
from synth_core.errors import ConfigError, DataError, SchemaError
from synth_core.marginals import CodedTable
from synth_core.schema import Schema, load_schema
from synth_core.tables import load_table


def _java_available() -> bool:
    java = shutil.which("java")
    if java is None:
        return False
    return subprocess.run([java, "-version"], capture_output=True).returncode == 0


requires_java = pytest.mark.skipif(not _java_available(),
                                   reason="Spark needs a Java runtime (java not found on PATH)")


@pytest.fixture(scope="module")
def spark():
    from synth_core.backends.spark_backend import spark_session

    session = spark_session("local[2]", **{"spark.sql.shuffle.partitions": "2"})
    yield session
    session.stop()


def all_cliques(names, k_max=3):
    out = []
    for k in range(1, k_max + 1):
        out += list(itertools.combinations(names, k))
    return out


def assert_same_marginals(backend, reference: CodedTable, cliques):
    assert backend.n == reference.n
    got = backend.marginals(cliques)
    for cl in cliques:
        np.testing.assert_array_equal(got[cl], reference.marginal(cl), err_msg=str(cl))
        assert got[cl].dtype == reference.marginal(cl).dtype == np.int32


# ---------------------------------------------------------------- sample data

SAMPLES = [("titanic", "titanic/titanic.csv"), ("adult", "adult/private.csv")]


@pytest.fixture(scope="module", params=SAMPLES, ids=[s[0] for s in SAMPLES])
def sample(request, tmp_path_factory):
    """(schema, csv path, parquet path, memory reference) of a bundled sample."""
    name, rel = request.param
    schema = load_schema(SAMPLE_DIR / f"{name}/schema.json")
    csv = SAMPLE_DIR / rel
    parquet = tmp_path_factory.mktemp(name) / f"{name}.parquet"
    pd.read_csv(csv, keep_default_na=False, na_values=[""]).to_parquet(parquet)
    return schema, csv, parquet, make_backend("memory", csv, schema)


def test_samples_have_missing_values_and_bins(sample):
    schema, *_ = sample
    kinds = {c.kind for c in schema.columns}
    assert "numeric" in kinds and any(c.missing for c in schema.columns)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_duckdb_equals_memory_on_samples(sample, fmt):
    schema, csv, parquet, reference = sample
    cliques = all_cliques(schema.names)
    with make_backend("duckdb", csv if fmt == "csv" else parquet, schema) as db:
        assert_same_marginals(db, reference, cliques)
        # 3-ways counted in batched passes; 1- and 2-ways derived from them
        threes = sum(len(c) == 3 for c in cliques)
        assert db.stats.cliques == threes
        assert db.stats.passes == 2 + -(-threes // db.batch_size)
        assert db.stats.bytes_scanned > 0
        # the rest of what the engine reads (MarginalCounter), as the schema and numpy say
        assert db.columns == tuple(schema.names) and db.size_of == dict(schema.sizes)
        assert all(db.cells(cl) == np.prod([schema.sizes[c] for c in cl]) for cl in cliques)
        np.testing.assert_array_equal(db.marginal(cliques[-1]), reference.marginal(cliques[-1]))


def test_duckdb_without_materializing_reads_the_file_per_batch(sample):
    schema, _, parquet, reference = sample
    cliques = list(itertools.combinations(schema.names, 3))[:10]
    with make_backend("duckdb", parquet, schema, materialize=False, batch_size=4) as db:
        assert_same_marginals(db, reference, cliques)
        assert db.stats.passes == 1 + 3


def test_marginals_in_any_column_order(sample):
    schema, _, parquet, reference = sample
    a, b, c = schema.names[:3]
    with make_backend("duckdb", parquet, schema) as db:
        db.marginals([(a, b, c)])
        passes = db.stats.passes
        for cl in [(c, a, b), (b, a), (c,), (c, b, a)]:
            np.testing.assert_array_equal(db.marginal(cl), reference.marginal(cl))
        assert db.stats.passes == passes  # derived from the counted (a, b, c)
        assert db.marginal(()).tolist() == [reference.n]


@pytest.mark.slow
@requires_java
def test_spark_equals_memory_on_samples(sample, spark):
    schema, csv, parquet, reference = sample
    # Spark jobs cost ~0.3 s each in local mode: Adult's first 8 columns (numeric
    # bins, missing values, text categories) keep this test short
    # (CSV through Spark is covered by the edge-case test)
    cliques = all_cliques(schema.names[:8])
    backend = make_backend("spark", parquet, schema, spark=spark)
    assert_same_marginals(backend, reference, cliques)
    assert backend.stats.passes == 1 + -(-sum(len(c) == 3 for c in cliques)
                                         // backend.batch_size)
    backend.close()


@pytest.mark.slow
@requires_java
def test_spark_counts_a_spark_dataframe(spark):
    schema = load_schema(SAMPLE_DIR / "titanic/schema.json")
    rows = load_table(SAMPLE_DIR / "titanic/titanic.csv")   # age has NaN: missing
    frame = spark.createDataFrame(rows)
    reference = make_backend("memory", rows, schema)
    backend = make_backend("spark", frame, schema, batch_size=1)
    # batch_size=1: one plain GROUP BY per clique (no grouping sets)
    assert_same_marginals(backend, reference, list(itertools.combinations(schema.names[2:5], 2)))
    assert backend.stats.passes == 1 + 3


# ---------------------------------------------------------------- edge cases

EDGE_SCHEMA = Schema.from_json({"columns": [
    {"name": "colour", "kind": "categorical", "categories": ["red", "green", "it's blue"],
     "missing": True},
    {"name": "x", "kind": "numeric", "lower": 0, "upper": 1, "bins": 10, "missing": True},
    {"name": "code", "kind": "categorical", "categories": [0, 1, 2, 3]},
    {"name": "level", "kind": "categorical", "categories": [1, 2.5, 10]},
    {"name": "grade", "kind": "categorical", "categories": ["1", "2", "3"]},
    {"name": "score", "kind": "categorical", "categories": ["1", "2.5"]},
    {"name": "flag", "kind": "categorical", "categories": ["false", "true"]},
    {"name": "big", "kind": "numeric", "lower": -1000, "upper": 1000, "bins": 7},
    # a value past a bound goes to the first or last bin, at the bounds and far past them
    {"name": "clipped", "kind": "numeric", "lower": -1, "upper": 1, "bins": 4, "clip": True},
]})


def edge_frame(n=400, seed=3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    edges = np.linspace(0, 1, 11)
    x = np.where(rng.random(n) < 0.5, rng.choice(edges, n), rng.random(n))  # exact bin edges
    x[rng.random(n) < 0.1] = np.nan
    colour = rng.choice(["red", "green", "it's blue", " red ", ""], n).astype(object)
    colour[rng.random(n) < 0.1] = None
    return pd.DataFrame({
        "colour": colour, "x": x,
        "code": rng.integers(0, 4, n),
        "level": rng.choice([1.0, 2.5, 10.0], n),
        "grade": rng.integers(1, 4, n),
        "score": rng.choice([1.0, 2.5], n),
        "flag": rng.random(n) < 0.3,
        "big": rng.choice([-1000, 1000, 0, -1000 + 2000 / 7, 999.99], n),
        "clipped": rng.choice([-1e9, -1.0, -0.5, 0.0, 0.49, 1.0, 1.0000001, 3.0], n),
        "extra": rng.random(n),  # not in the schema: ignored
    })


@pytest.fixture(scope="module")
def edge_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("edge")
    frame = edge_frame()
    frame.to_parquet(folder / "edge.parquet")
    frame.to_csv(folder / "edge.csv", index=False)
    return folder


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_duckdb_edge_cases_equal_memory(edge_files, fmt):
    path = edge_files / f"edge.{fmt}"
    reference = make_backend("memory", path, EDGE_SCHEMA)
    # the memory backend reads the same file through load_table + Schema.encode
    assert reference.marginal(("x",))[-1] > 0 and reference.marginal(("colour",))[-1] > 0
    with make_backend("duckdb", path, EDGE_SCHEMA, batch_size=5) as db:
        assert_same_marginals(db, reference, all_cliques(EDGE_SCHEMA.names, 2))


@pytest.mark.slow
@requires_java
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_spark_edge_cases_equal_memory(edge_files, fmt, spark):
    path = edge_files / f"edge.{fmt}"
    reference = make_backend("memory", path, EDGE_SCHEMA)
    backend = make_backend("spark", path, EDGE_SCHEMA, spark=spark, batch_size=8)
    assert_same_marginals(backend, reference, all_cliques(EDGE_SCHEMA.names, 2))


def _bad_file(tmp_path, **changes) -> tuple:
    frame = edge_frame(50)
    for column, (row, value) in changes.items():
        frame[column] = frame[column].astype(object)
        frame.loc[row, column] = value
    path = tmp_path / "bad.parquet"
    frame.to_parquet(path)
    return path, frame


@pytest.mark.parametrize("backend", ["duckdb", pytest.param("spark", marks=[requires_java,
                                                                            pytest.mark.slow])])
def test_values_outside_the_schema_are_refused(tmp_path, backend, request):
    options = {"spark": request.getfixturevalue("spark")} if backend == "spark" else {}
    frame = edge_frame(50)
    frame.loc[3, "colour"] = "purple"
    frame.loc[4, "big"] = 5000.0
    frame.loc[5, "code"] = 7
    path = tmp_path / "bad.parquet"
    frame.to_parquet(path)
    with pytest.raises(DataError) as memory_error:
        make_backend("memory", path, EDGE_SCHEMA)
    counter = make_backend(backend, path, EDGE_SCHEMA, **options)
    with pytest.raises(DataError) as err:
        counter.n
    text = str(err.value)
    assert "'colour'" in text and "'purple'" in text and "'big'" in text and "'code'" in text
    assert "5000" in text and "bad.parquet" in text
    assert memory_error.value.column == err.value.column == "colour"


def test_missing_values_need_a_missing_code(tmp_path):
    schema = Schema.from_json({"columns": [
        {"name": "code", "kind": "categorical", "categories": [0, 1, 2, 3]},
        {"name": "x", "kind": "numeric", "lower": 0, "upper": 1, "bins": 10}]})
    path = tmp_path / "m.csv"
    edge_frame(30)[["code", "x"]].to_csv(path, index=False)
    with pytest.raises(DataError, match="column 'x' has missing values"):
        make_backend("duckdb", path, schema).n


def test_missing_schema_column_is_named(tmp_path):
    path = tmp_path / "few.parquet"
    edge_frame(20)[["colour", "x"]].to_parquet(path)
    with pytest.raises(DataError, match="missing schema column"):
        make_backend("duckdb", path, EDGE_SCHEMA)


# ---------------------------------------------------------------- runs


def test_inputs_need_a_domain_not_read_off_the_private_file():
    with pytest.raises(ConfigError, match="declared schema"):
        prepare_inputs(SAMPLE_DIR / "titanic/private.csv", backend="duckdb")
    with pytest.raises(ConfigError, match="not both"):
        prepare_inputs(SAMPLE_DIR / "titanic/private.csv", SAMPLE_DIR / "titanic/public.csv",
                       backend="duckdb", public_flag="is_public")


def test_the_private_table_given_as_the_public_one_is_refused(tmp_path):
    """Public rows are used (and by public-only released) without protection: a
    public table that is the private one, as the same file, a copy or the same
    records in another order, would publish it under a DP claim."""
    private = SAMPLE_DIR / "titanic" / "private.csv"
    schema = SAMPLE_DIR / "titanic" / "schema.json"
    frame = load_table(private)
    shuffled = frame.sample(frac=1.0, random_state=0)[list(reversed(frame.columns))]
    copy = tmp_path / "copy.csv"
    copy.write_bytes(private.read_bytes())
    for public, backend in [(private, "memory"), (copy, "memory"), (shuffled, "memory"),
                            (private, "duckdb"), (copy, "duckdb")]:
        with pytest.raises(ConfigError, match="holds the same records as the private table"):
            prepare_inputs(private, public, schema=schema, backend=backend)
    # with the public-only baseline, nothing is written
    assert cli_main(["run", "--data", str(private), "--public", str(copy), "--mechanism",
                     "public-only", "--epsilon", "1", "--out", str(tmp_path / "s.csv"),
                     "--report", str(tmp_path / "r.json"), "--quiet"]) == 2
    assert not (tmp_path / "s.csv").exists()
    # other records (one row fewer) are public rows like any
    prepare_inputs(private, frame.iloc[1:], schema=schema)
    # the share of public rows that are private records by chance, as docs/trust.md gives
    # it beside the workbench's 90% warning threshold
    from synth_core import load_sample
    from synth_core.tables import shared_records
    for name, share in [("titanic", 0.51), ("adult-pub025", 0.0006)]:
        sample = load_sample(name)
        assert round(shared_records(sample.private, sample.public) / len(sample.public),
                     2 if share > 0.01 else 4) == share
    # a public table over other columns is named as such, not as six columns to drop
    with pytest.raises(DataError, match="has no column in common with the private table"):
        prepare_inputs(private, pd.DataFrame({"x": [1, 2]}), schema=schema)


def test_domain_from_public_rows():
    # a public table that covers every private value gives the domain
    inputs = prepare_inputs(SAMPLE_DIR / "titanic/private.csv",
                            SAMPLE_DIR / "titanic/titanic.csv", backend="duckdb")
    assert inputs.schema.source == "public"
    assert isinstance(inputs.data.private, CountingBackend)
    assert isinstance(inputs.data.public, CodedTable) and inputs.data.n == 1008
    # a column of the public table only (a year the curator's table lacks) is left out of
    # the domain, as a declared schema leaves it out; it was refused as missing from the
    # private table
    extra = pd.read_csv(SAMPLE_DIR / "titanic/titanic.csv").assign(year=1912)
    for backend in ("memory", "duckdb"):
        inputs = prepare_inputs(SAMPLE_DIR / "titanic/private.csv", extra, backend=backend)
        assert "year" not in inputs.schema.names and inputs.schema.source == "public"
    # one that does not is reported before the run, with what to do
    with pytest.raises(DataError, match="read off the public rows") as err:
        prepare_inputs(SAMPLE_DIR / "titanic/private.csv", SAMPLE_DIR / "titanic/public.csv",
                       backend="duckdb")
    assert "column 'parch'" in str(err.value)
    # the API's way to a schema over both tables, as a runnable hint (helper-59: the
    # proposal itself cannot be passed as schema=)
    assert "propose_schema(private, public) (review it, then pass its .schema() as schema=)" \
        in str(err.value)
    assert "synth schema infer" in err.value.text("cli")
    # the message quotes private values with their row counts: labelled curator-only
    # (helper-60), in memory and when DuckDB counts the file
    assert "CURATOR-ONLY: the values and row counts" in str(err.value)
    with pytest.raises(DataError, match="CURATOR-ONLY: the values and row counts"):
        prepare_inputs(SAMPLE_DIR / "titanic/private.csv", SAMPLE_DIR / "titanic/public.csv")


@pytest.mark.parametrize("backend", ["memory", "duckdb",
                                     pytest.param("spark", marks=requires_java)])
def test_every_backend_implements_the_contract(backend, request):
    options = {"spark": request.getfixturevalue("spark")} if backend == "spark" else {}
    source = open_backend(backend, SAMPLE_DIR / "titanic/titanic.csv", **options)
    assert source.backend == backend
    assert source.name == "titanic.csv" and "survived" in source.columns
    schema = load_schema(SAMPLE_DIR / "titanic/schema.json")
    counter = source.counter(schema, None)
    assert counter.n == 1309
    # the counts every backend gives (flattened, C order): the table's own, through the encoding
    truth = schema.encode(load_table(SAMPLE_DIR / "titanic/titanic.csv"))
    for clique in (("survived",), ("pclass", "sex")):
        expected = np.zeros([counter.size_of[c] for c in clique])
        np.add.at(expected, tuple(truth[c].to_numpy() for c in clique), 1)
        np.testing.assert_array_equal(counter.marginal(clique), expected.ravel())


def test_unknown_backend_is_refused_by_name():
    with pytest.raises(ConfigError, match="unknown counting backend 'sqlite'") as err:
        prepare_inputs(SAMPLE_DIR / "titanic/titanic.csv", backend="sqlite")
    assert "memory, duckdb, spark" in err.value.hint


def test_a_public_dataframe_is_named_alike_by_every_backend():
    public = load_table(SAMPLE_DIR / "titanic/titanic.csv")
    labels = {b: prepare_inputs(SAMPLE_DIR / "titanic/private.csv", public, backend=b).public_label
              for b in ("memory", "duckdb")}
    assert labels["memory"] == labels["duckdb"] == "an unnamed public table, 1309 rows"


def test_public_table_and_flag_are_refused_before_any_file_is_read(tmp_path):
    with pytest.raises(ConfigError, match="not both"):
        prepare_inputs(tmp_path / "absent.csv", tmp_path / "absent.csv", public_flag="f")


def test_api_run_with_duckdb_equals_memory():
    schema = load_schema(SAMPLE_DIR / "titanic/schema.json")
    results = {}
    for backend in ("memory", "duckdb"):
        synth = Synthesizer("aim", epsilon=1.0, seed=4, rounds=6, workload="all-2way",
                            fit_iters=50, final_fit_iters=100)
        results[backend] = synth.fit(SAMPLE_DIR / "titanic/titanic.csv", schema=schema,
                                     backend=backend)
    mem, db = results["memory"], results["duckdb"]
    pd.testing.assert_frame_equal(mem.synthetic, db.synthetic)
    assert [m.clique for m in mem.measurements] == [m.clique for m in db.measurements]
    assert db.curator_diagnostics().workload_error == mem.curator_diagnostics().workload_error
    assert db.inputs.data.private.stats.passes >= 2


def test_cli_run_with_duckdb_equals_memory(tmp_path, capsys):
    outs = {}
    for backend in ("memory", "duckdb"):
        out, report = tmp_path / f"{backend}.csv", tmp_path / f"{backend}.json"
        code = cli_main(["run", "--sample", "titanic", "--backend", backend, "--mechanism",
                         "jam-pgm", "--epsilon", "1", "--seed", "0", "--rounds", "3",
                         "--fit-iters", "50", "--final-fit-iters", "100",
                         "--out", str(out), "--report", str(report)])
        assert code == 0
        outs[backend] = (out.read_text(), json.loads(report.read_text()))
    printed = capsys.readouterr().out
    assert "counted with duckdb" in printed and "passes" in printed
    assert outs["memory"][0] == outs["duckdb"][0]
    assert outs["memory"][1]["measurements"] == outs["duckdb"][1]["measurements"]


def test_cli_refuses_backend_without_domain(tmp_path, capsys):
    code = cli_main(["run", "--data", str(SAMPLE_DIR / "titanic/private.csv"),
                     "--backend", "duckdb", "--out", str(tmp_path / "s.csv"),
                     "--report", str(tmp_path / "r.json")])
    assert code == 2
    err = capsys.readouterr().err
    assert "--schema" in err and "load the whole file" in err
    assert not (tmp_path / "s.csv").exists()


# ---------------------------------------------------------------- public rows flagged in the file

TITANIC_SCHEMA = SAMPLE_DIR / "titanic/schema.json"


@pytest.fixture(scope="module")
def flagged_files(tmp_path_factory):
    """All of Titanic with a text flag column (about 25% " yes", else "No"), as
    Parquet and CSV: the flagged rows are public, the others private."""
    folder = tmp_path_factory.mktemp("flagged")
    frame = load_table(SAMPLE_DIR / "titanic/titanic.csv")
    rng = np.random.default_rng(0)
    frame.insert(2, "is_public", np.where(rng.random(len(frame)) < 0.25, " yes", "No"))
    frame.to_parquet(folder / "flagged.parquet")
    frame.to_csv(folder / "flagged.csv", index=False)
    return folder


def _without_seconds(obj):
    """A report without its wall-clock times (they differ between any two runs)."""
    if isinstance(obj, dict):
        return {k: _without_seconds(v) for k, v in obj.items()
                if "seconds" not in k and k != "created"}
    if isinstance(obj, list):
        return [_without_seconds(v) for v in obj]
    return obj


def assert_same_run(mem, db):
    """Two runs on the same data and seed: identical synthetic data, measurements,
    ledger, report and curator-only diagnostics."""
    pd.testing.assert_frame_equal(mem.synthetic, db.synthetic)
    assert [(m.clique, m.source) for m in mem.measurements] == \
        [(m.clique, m.source) for m in db.measurements]
    assert mem.ledger.to_json() == db.ledger.to_json()
    assert _without_seconds(mem.report) == _without_seconds(db.report)
    m, d = mem.curator_diagnostics(), db.curator_diagnostics()
    assert m.workload_error == d.workload_error and m.per_marginal == d.per_marginal
    assert mem.curator_diagnostics() is m      # counted once per result (the CLI asks twice)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_duckdb_flag_column_equals_memory(flagged_files, fmt):
    path = flagged_files / f"flagged.{fmt}"
    kw = dict(public_flag="is_public", schema=TITANIC_SCHEMA)
    mem = prepare_inputs(path, **kw)
    db = prepare_inputs(path, backend="duckdb", **kw)
    assert isinstance(db.data.private, CountingBackend)
    # the release names the flag column, not the private file (names tell whose records)
    assert db.public_label == mem.public_label == \
        "rows of the private table flagged by column 'is_public'"
    assert db.data.public.n == mem.data.public.n and 0 < db.data.public.n < 1309 // 2
    assert db.data.n == mem.data.n == 1309 - db.data.public.n
    cliques = all_cliques(mem.schema.names)
    assert_same_marginals(db.data.private, mem.data.private, cliques)
    assert_same_marginals(db.data.public, mem.data.public, cliques)


def test_duckdb_flag_domain_from_the_flagged_rows(tmp_path):
    from conftest import make_correlated

    frame = make_correlated(600, seed=5)[["sex", "edu", "income"]]
    frame["public"] = np.random.default_rng(1).random(len(frame)) < 0.3   # a boolean flag
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    mem = prepare_inputs(path, public_flag="public")
    db = prepare_inputs(path, public_flag="public", backend="duckdb")
    assert db.schema.source == mem.schema.source == "public"
    assert db.schema.to_json() == mem.schema.to_json()
    assert_same_marginals(db.data.private, mem.data.private, all_cliques(db.schema.names))


def test_duckdb_flag_column_is_checked_over_the_whole_file(tmp_path, monkeypatch):
    from synth_core.backends import inputs as backend_inputs

    frame = load_table(SAMPLE_DIR / "titanic/titanic.csv")
    path = tmp_path / "f.parquet"

    def write(flags):
        frame.assign(flag=flags).to_parquet(path)

    kw = dict(public_flag="flag", schema=TITANIC_SCHEMA)
    flags = np.where(np.arange(len(frame)) % 4 == 0, "yes", "no").astype(object)
    flags[[7, 8, 9]] = ["maybe", "maybe", None]
    write(flags)
    messages = []
    for backend in ("memory", "duckdb"):
        with pytest.raises(DataError) as err:
            prepare_inputs(path, backend=backend, **kw)
        messages.append(str(err.value))
        assert err.value.column == "flag"
    assert "3 rows that are not true or false" in messages[1] and "'maybe' (2 rows)" in messages[1]
    write(np.full(len(frame), "no"))
    with pytest.raises(DataError, match="has no rows"):
        prepare_inputs(path, backend="duckdb", **kw)
    write(np.full(len(frame), True))
    with pytest.raises(DataError, match="no rows once the public rows are split off"):
        prepare_inputs(path, backend="duckdb", **kw)
    write(np.arange(len(frame)) % 2)               # 0/1 numbers: a valid flag
    monkeypatch.setattr(backend_inputs, "MAX_PUBLIC_ROWS", 100)
    with pytest.raises(ConfigError, match="stops at 100") as err:
        prepare_inputs(path, backend="duckdb", **kw)
    assert "own (smaller) file" in err.value.hint
    monkeypatch.undo()
    schema = load_schema(TITANIC_SCHEMA).to_json()
    schema["columns"].append({"name": "flag", "kind": "categorical", "categories": [0, 1]})
    with pytest.raises(SchemaError, match="also a schema column"):
        prepare_inputs(path, backend="duckdb", public_flag="flag", schema=schema)


def test_api_run_with_a_flag_column_duckdb_equals_memory(flagged_files):
    results = {}
    for backend in ("memory", "duckdb"):
        synth = Synthesizer("jam-pgm", epsilon=1.0, seed=3, rounds=4, workload="all-2way",
                            fit_iters=40, final_fit_iters=80)
        results[backend] = synth.fit(flagged_files / "flagged.parquet", schema=TITANIC_SCHEMA,
                                     public_flag="is_public", backend=backend)
    mem, db = results["memory"], results["duckdb"]
    assert db.report["public_information"]["rows"] == mem.report["public_information"]["rows"]
    assert {m.source for m in db.measurements} == {"public", "private"}   # flagged rows used
    assert_same_run(mem, db)
    assert db.public_proxy_error() == mem.public_proxy_error()


# ---------------------------------------------------------------- public columns


def test_api_vjam_public_columns_duckdb_equals_memory():
    results = {}
    for backend in ("memory", "duckdb"):
        synth = Synthesizer("vjam-pgm", epsilon=1.0, seed=2, rounds=3, workload="all-2way",
                            fit_iters=30, final_fit_iters=60)
        results[backend] = synth.fit(SAMPLE_DIR / "titanic/titanic.csv", schema=TITANIC_SCHEMA,
                                     public_columns=["pclass", "sex"], backend=backend)
    mem, db = results["memory"], results["duckdb"]
    assert db.inputs.public_values is None      # plain vJAM-PGM loads no records
    assert any(m.source == "public" for m in db.measurements)
    assert_same_run(mem, db)


def test_conditional_generation_with_a_flag_duckdb_equals_memory(flagged_files):
    results = {}
    for backend in ("memory", "duckdb"):
        synth = Synthesizer("aim", epsilon=1.0, seed=1, rounds=30, workload="all-2way",
                            fit_iters=40, final_fit_iters=80, conditional=True)
        results[backend] = synth.fit(flagged_files / "flagged.parquet", schema=TITANIC_SCHEMA,
                                     public_flag="is_public", public_columns=["pclass", "sex"],
                                     backend=backend)
    mem, db = results["memory"], results["duckdb"]
    # the private records' public values, loaded for the public columns only
    assert list(db.inputs.public_values.columns) == ["pclass", "sex"]
    assert len(db.inputs.public_values) == db.inputs.data.n
    pd.testing.assert_frame_equal(db.inputs.public_values, mem.inputs.public_values)
    assert db.report["conditional_generation"]["conditioned_on"] == ["pclass", "sex"]
    assert_same_run(mem, db)


def test_mechanisms_that_read_every_record_need_the_memory_backend():
    synth = Synthesizer("vpmw", epsilon=1.0, seed=0, rounds=2, workload="all-2way")
    with pytest.raises(ConfigError, match="memory backend"):
        synth.fit(SAMPLE_DIR / "titanic/titanic.csv", schema=TITANIC_SCHEMA,
                  public_columns=["pclass"], backend="duckdb")


def test_duckdb_counts_again_after_close(flagged_files):
    schema = load_schema(TITANIC_SCHEMA)
    path = flagged_files / "flagged.parquet"
    reference = prepare_inputs(path, public_flag="is_public", schema=schema).data.private
    db = make_backend("duckdb", path, schema, public_flag="is_public")
    a, b, c = schema.names[:3]
    db.marginals([(a, b)])
    db.close()
    np.testing.assert_array_equal(db.marginal((a,)), reference.marginal((a,)))   # cached
    np.testing.assert_array_equal(db.marginal((b, c)), reference.marginal((b, c)))  # reopened
    db.close()


@pytest.mark.slow
@requires_java
def test_spark_flag_column_and_public_columns_equal_memory(flagged_files, spark):
    path = flagged_files / "flagged.parquet"
    kw = dict(public_flag="is_public", schema=TITANIC_SCHEMA, public_columns=["pclass", "sex"])
    mem = prepare_inputs(path, **kw)
    sp = prepare_inputs(path, backend="spark", backend_options={"spark": spark}, **kw)
    assert sp.public_label == mem.public_label and sp.data.public.n == mem.data.public.n
    cliques = all_cliques(mem.schema.names, 2)
    assert_same_marginals(sp.data.private, mem.data.private, cliques)
    assert_same_marginals(sp.data.public, mem.data.public, cliques)
    from synth_core.backends.inputs import own_public_codes

    codes = own_public_codes(sp, ["pclass", "sex"])
    np.testing.assert_array_equal(codes.to_numpy(),
                                  mem.data.private.to_frame()[["pclass", "sex"]].to_numpy())
    pd.testing.assert_frame_equal(sp.public_values, mem.public_values)
    sp.data.private.close()


def test_a_csv_glob_counted_by_duckdb_is_read_or_said_to_match_nothing(tmp_path):
    """helper-61: a CSV pattern raised a raw FileNotFoundError (the size was read off the
    pattern as if it were a file)."""
    pytest.importorskip("duckdb")
    from synth_core.errors import DataError
    private = pd.read_csv(SAMPLE_DIR / "titanic/private.csv")
    for i, part in enumerate((private.iloc[:500], private.iloc[500:])):
        part.to_csv(tmp_path / f"part{i}.csv", index=False)
    schema = SAMPLE_DIR / "titanic/schema.json"
    inputs = prepare_inputs(str(tmp_path / "part*.csv"), schema=schema, backend="duckdb")
    assert inputs.data.n == len(private)
    with pytest.raises(DataError, match="no file matches"):
        prepare_inputs(str(tmp_path / "none*.csv"), schema=schema, backend="duckdb")
