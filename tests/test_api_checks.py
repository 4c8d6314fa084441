"""The Python API refuses arguments of the wrong type or range, tables with
repeated column names, and columns that a run would silently leave out."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from synth_core import Synthesizer, synthesize
from synth_core.api import MAX_ROUNDS, RunConfig
from synth_core.privacy import MAX_DELTA
from synth_core.errors import ConfigError, DataError, SynthError
from synth_core.privacy import MAX_EPSILON, rho_from_epsilon_delta

SIZES = {"a": 3, "b": 2, "c": 2}
QUICK = dict(mechanism="mwem-pgm", epsilon=1.0, workload="all-1way", rounds=1, fit_iters=5,
             final_fit_iters=5, seed=0)


def table(n=120, seed=0, columns=("a", "b", "c")) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.integers(0, SIZES.get(c, 2), n) for c in columns})


@pytest.mark.parametrize("kwargs", [
    {"epsilon": "1"}, {"epsilon": True}, {"epsilon": None}, {"epsilon": math.inf},
    {"epsilon": 1e300}, {"epsilon": MAX_EPSILON * 1.01},
    {"delta": "1e-9"}, {"delta": False}, {"delta": 1.0}, {"delta": 0.5},
    {"delta": MAX_DELTA * 1.01},
    {"rounds": 2.5}, {"rounds": True}, {"rounds": "3"}, {"rounds": 0},
    {"rounds": MAX_ROUNDS + 1}, {"rounds": 10 ** 9},
    {"fit_iters": 2.5}, {"fit_iters": 0}, {"final_fit_iters": 10.0}, {"final_fit_iters": True},
    {"max_model_size": math.inf}, {"max_model_size": -1.0}, {"max_model_size": "80"},
    {"max_model_size": math.nan},
    {"fit_tol": "0.1"}, {"seed": -1}, {"seed": 1.5}, {"seed": True}, {"seed": "0"},
])
def test_bad_arguments_are_refused(kwargs):
    with pytest.raises(SynthError):
        Synthesizer("aim", **kwargs)
    with pytest.raises(SynthError):
        RunConfig("aim", **kwargs).validate()


def test_a_delta_up_to_the_bound_is_taken_and_one_above_says_why():
    # the documented bound, 1e-3 (docs/python_api.md), written out: not the constant
    RunConfig("aim", delta=1e-3).validate()
    with pytest.raises(ConfigError):
        RunConfig("aim", delta=1.01e-3).validate()
    with pytest.raises(ConfigError, match="chance that the guarantee fails outright") as exc:
        RunConfig("aim", delta=0.5).validate()
    assert "far below 1/n" in exc.value.hint


def test_an_epsilon_too_small_to_mean_anything_is_refused_before_the_run():
    """At epsilon 1e-8 an unbounded run's noisy total asked for hundreds of millions of
    synthetic rows (a raw MemoryError after the budget was spent). The documented
    floor, 1e-4 (docs/python_api.md), written out: not the constant."""
    RunConfig("independent", epsilon=1e-4).validate()
    with pytest.raises(ConfigError, match="at least 0.0001, got 9.9e-05") as exc:
        RunConfig("independent", epsilon=0.99e-4).validate()
    assert "0.1 and 10" in exc.value.hint


@pytest.mark.parametrize("mechanism", ["jam-pgm", "vjam-pgm", "gem"])
def test_a_budget_share_that_leaves_a_step_nothing_is_refused(mechanism):
    """vjam-pgm with alpha=1e-320 overflowed a noise variance after spending."""
    from synth_core.mechanisms import make_mechanism
    options = {"public_columns": ("a",)} if mechanism == "vjam-pgm" else {}
    for alpha in (1e-320, 0.0005, 0.9995, 1.0, math.nan):
        with pytest.raises(ConfigError, match="must lie between 0.001 and 0.999"):
            make_mechanism(mechanism, alpha=alpha, **options)
    for alpha in ("0.5", True, None):      # a raw TypeError, after a sweep's reservation
        with pytest.raises(ConfigError, match="takes a number|must be a number"):
            make_mechanism(mechanism, alpha=alpha, **options)
    make_mechanism(mechanism, alpha=0.001, **options)


@pytest.mark.parametrize("mechanism, options", [
    ("privbayes-pgm", {"degree": "2"}), ("aim", {"condition_max_mb": "5"}),
    ("gem", {"lr": "0.001"}), ("gem", {"hidden": 16}), ("aim", {"conditional": "yes"}),
    ("mwem-pgm", {"rounds": 2.5}), ("jam-pgm", {"rounds": True})])
def test_an_option_of_the_wrong_type_is_named_before_anything_runs(mechanism, options):
    """A sweep spec's degree = "2" raised a raw TypeError in the constructor, after the
    job's reservation (charged in full)."""
    from synth_core.mechanisms import MECHANISMS
    [(key, value)] = options.items()
    with pytest.raises(ConfigError, match=f"Option {key} takes .*, got {value!r}"):
        MECHANISMS[mechanism].check_options(options)


def test_an_unbounded_runs_row_count_stays_between_one_and_the_cap():
    from synth_core.api import MAX_SYNTHETIC_ROWS, noisy_row_count
    assert noisy_row_count(1234.4) == (1234, None)
    rows, note = noisy_row_count(3.5e8)
    assert rows == MAX_SYNTHETIC_ROWS == 10_000_000 and "350,000,000 records" in note
    assert noisy_row_count(math.inf)[0] == MAX_SYNTHETIC_ROWS
    rows, note = noisy_row_count(-52.0)
    assert rows == 1 and "below one record" in note


def test_rounds_given_to_a_mechanism_that_sets_its_own_are_said_unused():
    """MST ran its own rounds while its report recorded the rounds=3 it was given."""
    from synth_core import load_sample
    from synth_core.api import RunWarning
    t = load_sample("titanic")
    with pytest.warns(RunWarning, match=r"MST sets its own number of rounds \(\d+ here\): "
                                        r"rounds=3 was not used"):
        result = Synthesizer("mst", epsilon=1, rounds=3, seed=0, final_fit_iters=20).fit(
            t.private, schema=t.schema)
    assert result.report["config"]["rounds"] is None and len(result.events) != 3
    assert Synthesizer("mwem-pgm", epsilon=1, rounds=3, seed=0, final_fit_iters=20).fit(
        t.private, schema=t.schema).report["config"]["rounds"] == 3


def test_noise_larger_than_the_whole_table_is_said():
    """A 3-row table at epsilon 1 ran with noise std 14 per cell and said nothing."""
    from synth_core.api import RunWarning
    tiny = pd.DataFrame({"a": [1, 2, 1], "b": ["x", "y", "x"]})
    with pytest.warns(RunWarning, match=r"noise \(std 14.2 per cell or more\) is larger "
                                        r"than the 3 synthetic records"):
        synthesize(tiny, mechanism="mst", epsilon=1, seed=0, final_fit_iters=20,
                   workload="all-2way")
    big = pd.concat([tiny] * 100, ignore_index=True)
    result = synthesize(big, mechanism="mst", epsilon=1, seed=0, final_fit_iters=20,
                        workload="all-2way")
    assert not any("larger than the" in w for w in result.report["warnings"])


def test_good_arguments_are_accepted_and_normalised():
    s = Synthesizer("aim", epsilon=2, delta=1e-9, rounds=np.int64(6), max_model_size=10,
                    fit_iters=7, seed=np.int64(3))
    cfg = s.config
    assert (cfg.epsilon, cfg.rounds, cfg.max_model_size, cfg.fit_iters, cfg.seed) == (2.0, 6, 10.0, 7, 3)
    assert type(cfg.epsilon) is float and type(cfg.rounds) is int and type(cfg.seed) is int
    Synthesizer("aim", rounds=MAX_ROUNDS, epsilon=MAX_EPSILON)


def test_epsilon_cap_is_where_the_conversion_is_still_exact():
    rho = rho_from_epsilon_delta(MAX_EPSILON, 1e-9)
    assert 0.99 * MAX_EPSILON < rho < MAX_EPSILON
    with pytest.raises(ConfigError, match="at most"):
        rho_from_epsilon_delta(MAX_EPSILON * 1.000001, 1e-9)


def test_repeated_column_names_are_named():
    df = pd.concat([table(), table(seed=1)[["b"]]], axis=1)
    with pytest.raises(DataError, match="duplicated column names: 'b'") as info:
        synthesize(df, schema=dict(SIZES), **QUICK)
    assert info.value.column == "b"
    with pytest.raises(DataError, match="public table has duplicated"):
        synthesize(table(), df, schema=dict(SIZES), **{**QUICK, "mechanism": "jam-pgm"})


def test_an_unnamed_dataframe_is_called_one_in_messages():
    """helper-59: errors said "private table 'private table'"."""
    empty = table().iloc[:0]
    with pytest.raises(DataError, match="private table 'unnamed DataFrame' has no rows"):
        synthesize(empty, schema=dict(SIZES), **QUICK)


def test_column_names_that_are_not_text_are_named_with_the_fix():
    """A frame read with header=None or built from an array has integer column names;
    the error that lists columns missing from the schema used to crash on them."""
    numbered = table().set_axis(range(3), axis=1)
    for kwargs in ({}, {"schema": {"0": 3, "1": 2, "2": 2}}):
        with pytest.raises(DataError, match="column names that are not text: 0, 1, 2") as info:
            synthesize(numbered, **kwargs, **QUICK)
        assert "str(c)" in info.value.hint and info.value.column == "0"
    with pytest.raises(DataError, match="public table has column names that are not text"):
        synthesize(table(), numbered, schema=dict(SIZES), **{**QUICK, "mechanism": "jam-pgm"})


def test_run_warnings_name_the_users_line_through_every_entry_point():
    """A RunWarning points at the caller's code, not at the package's lines between
    (fit over run): else every call site shows the same library line and Python's
    once-per-line filter merges them."""
    import warnings

    from synth_core import Synthesizer
    from synth_core.api import RunWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        synthesize(table(), **QUICK)                       # fit inside synthesize
        for _ in Synthesizer(**QUICK).run(table()):         # the generator itself
            pass
    found = [w for w in caught if issubclass(w.category, RunWarning)]
    assert len(found) >= 2 and "domain was read off the private table" in str(found[0].message)
    assert {Path(w.filename).resolve() for w in found} == {Path(__file__).resolve()}


def test_a_mechanism_without_public_rows_names_the_apis_arguments(tmp_path):
    """helper-59: the API's error named the command line's --public and --public-flag,
    and did not say that the public table given was empty."""
    from synth_core import load_sample
    s = load_sample("titanic")
    for mechanism in ("jam-pgm", "public-only", "pmw-pub"):
        for public, said in ((None, "needs public rows."),
                             (s.public.iloc[:0], "(the public rows given are empty)")):
            with pytest.raises(ConfigError) as err:
                synthesize(s.private, public, schema=s.schema, mechanism=mechanism, epsilon=1.0,
                           rounds=2)
            assert said in str(err.value) and "--public" not in str(err.value)
            assert "public= (a table) or public_flag= (a column)" in err.value.hint
            assert "--public PATH or --public-flag COLUMN" in err.value.text("cli")


def test_the_release_helpers_take_what_a_user_plausibly_passes_or_say_what_they_need():
    """helper-59: raw AttributeError/TypeError/KeyError tracebacks, and a write() that
    wrote nothing silently."""
    pytest.importorskip("altair")
    from synth_core.notebook import error_chart, rounds_chart
    from synth_core.uncertainty import codes_of, marginal_bounds
    result = synthesize(table(), schema=dict(SIZES), **QUICK)
    with pytest.raises(ConfigError, match="Nothing to write"):
        result.write()
    for call in (lambda: marginal_bounds("report.json", result.synthetic),
                 lambda: codes_of("report.json", result.synthetic)):
        with pytest.raises(ConfigError, match="not a str") as err:
            call()
        assert "json.load" in err.value.hint
    rows = pd.DataFrame([{"epsilon": 1.0, "mechanism": "aim", "error": 0.1},
                         {"epsilon": 2.0, "mechanism": "aim", "error": 0.05}])
    assert error_chart(rows).to_dict()["layer"]                     # a DataFrame is taken
    with pytest.raises(ConfigError, match="no 'error' to plot") as err:
        error_chart(rows.rename(columns={"error": "err"}))
    assert "epsilon, err, mechanism" in err.value.hint
    assert rounds_chart(result.events).to_dict()["layer"]
    with pytest.raises(ConfigError, match="not a RunResult") as err:
        rounds_chart(result)
    assert err.value.hint == "Pass result.events."


def test_a_column_missing_from_the_public_rows_is_an_error():
    with pytest.raises(DataError, match="'c'.*not in the public rows") as info:
        synthesize(table(), table(60, 1, ("a", "b")), **{**QUICK, "mechanism": "jam-pgm"})
    assert "drop_columns" in str(info.value) and info.value.column == "c"


def test_a_partial_schema_is_an_error_and_dropping_is_explicit():
    with pytest.raises(DataError, match="'c'.*not in the schema"):
        synthesize(table(), schema={"a": 3, "b": 2}, **QUICK)
    result = synthesize(table(), schema={"a": 3, "b": 2}, drop_columns=["c"], **QUICK)
    assert list(result.synthetic.columns) == ["a", "b"]
    assert result.report["data"]["dropped_columns"] == ["c"]
    # a dropped column may also be in the schema: it leaves the run altogether
    result = synthesize(table(), schema=dict(SIZES), drop_columns="c", **QUICK)
    assert list(result.synthetic.columns) == ["a", "b"]
    assert result.report["data"]["dropped_columns"] == ["c"]
    assert [c["name"] for c in result.report["schema"]["columns"]] == ["a", "b"]


def test_dropping_a_column_that_is_not_there_or_public_is_refused():
    with pytest.raises(ConfigError, match="'zzz'"):
        synthesize(table(), schema=dict(SIZES), drop_columns=["zzz"], **QUICK)
    with pytest.raises(ConfigError, match="dropped and public"):
        synthesize(table(), schema=dict(SIZES), drop_columns=["a"], public_columns=["a"],
                   **{**QUICK, "mechanism": "vjam-pgm"})


def test_write_checks_every_path_first_and_writes_all_or_nothing(tmp_path):
    result = synthesize(table(), schema=dict(SIZES), **QUICK)
    with pytest.raises(DataError, match="unsupported file type"):
        result.write(tmp_path / "s.csv", tmp_path / "r.txt")
    (tmp_path / "blocker").write_text("a file, not a folder")
    with pytest.raises(DataError, match="not a folder"):
        result.write(tmp_path / "s.csv", tmp_path / "blocker" / "r.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker"]
    result.write(tmp_path / "s.parquet", tmp_path / "r.json", tmp_path / "d.json")
    assert json.loads((tmp_path / "d.json").read_text())["run"]["seed"] == 0
    assert "seed" not in json.loads((tmp_path / "r.json").read_text())["config"]


def test_write_all_renames_nothing_when_one_file_fails(tmp_path):
    from synth_core.report import write_all
    (tmp_path / "blocker").write_text("x")
    with pytest.raises(DataError, match="blocker"):
        write_all([(tmp_path / "good.csv", b"a\r\n1\r\n"),
                   (tmp_path / "blocker" / "r.json", b"{}")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker"]


def test_write_all_puts_back_what_it_replaced_when_a_later_rename_fails(tmp_path):
    """helper-60: a target that turned into a folder after the check left the new
    synthetic data in place without its report (and the old release's data gone)."""
    from synth_core.report import write_all
    (tmp_path / "old.csv").write_bytes(b"old release\n")
    (tmp_path / "report.json").mkdir()                 # the rename onto it fails
    for first in ("old.csv", "new.csv"):
        with pytest.raises(DataError, match="report.json"):
            write_all([(tmp_path / first, b"synthetic\n"), (tmp_path / "report.json", b"{}")])
        assert (tmp_path / "old.csv").read_bytes() == b"old release\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["old.csv", "report.json"]
    write_all([(tmp_path / "old.csv", b"new release\n"), (tmp_path / "r.json", b"{}")])
    assert (tmp_path / "old.csv").read_bytes() == b"new release\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.csv", "r.json", "report.json"]


def test_duckdb_backend_refuses_a_lost_column_and_drops_on_request(tmp_path):
    pytest.importorskip("duckdb")
    path = tmp_path / "private.parquet"
    table(200).to_parquet(path)
    kw = {**QUICK, "backend": "duckdb"}
    with pytest.raises(DataError, match="'c'.*not in the schema"):
        synthesize(path, schema={"a": 3, "b": 2}, **kw)
    result = synthesize(path, schema={"a": 3, "b": 2}, drop_columns=["c"], **kw)
    assert result.report["data"]["dropped_columns"] == ["c"]
    assert list(result.synthetic.columns) == ["a", "b"]


def test_rows_flagged_public_that_a_mechanism_ignores_are_said_to_be_left_out(tmp_path):
    """A mechanism without public rows, given rows flagged public and no schema: the
    report said the rows were 'ignored' and the domain 'read off the public data',
    though the flagged rows were taken out of the private table and the domain was
    read off them. It says both, and names the rows it read the domain off."""
    from synth_core import load_sample
    from synth_core.api import RunWarning
    t = load_sample("titanic")
    public = pd.concat([t.private, t.public], ignore_index=True)   # holds every value
    table = pd.concat([t.private.assign(is_pub=0), public.assign(is_pub=1)],
                      ignore_index=True)
    with pytest.warns(RunWarning, match="left out of the table it synthesises"):
        result = Synthesizer("mst", epsilon=1, seed=0, final_fit_iters=20).fit(
            table, public_flag="is_pub", data_name="clinic")
    report = result.report
    flagged = "rows of the private table flagged by column 'is_pub'"
    assert report["warnings"] == [f"mst does not use public rows: the {flagged} were left "
                                  "out of the table it synthesises, and the domain was read "
                                  "off them."]
    assert report["data"]["n"] == len(t.private)
    assert f"read off the public data ({flagged}" in report["domain"]["note"]
    assert f"read off the public data ({flagged}" in report["privacy"]["statement"]
    assert report["public_information"]["rows"] is None     # the mechanism did not use them
    # a separate public table a mechanism ignores, whose rows gave the domain
    with pytest.warns(RunWarning, match="were ignored, except that the domain was read"):
        Synthesizer("mst", epsilon=1, seed=0, final_fit_iters=20).fit(t.private,
                                                                      public=public)


def test_a_run_warns_about_inputs_it_ignores_or_cannot_protect(tmp_path):
    """Public rows given to a mechanism that ignores them, and a domain read off the
    private table: a RunWarning and a line of the report's warnings; the seeded
    run's files warn when written, a release-mode run's do not."""
    import warnings

    from synth_core import load_sample
    from synth_core.api import PRIVATE_DOMAIN_WARNING, SEEDED_WRITE_WARNING, RunWarning
    t = load_sample("titanic")
    with pytest.warns(RunWarning, match="mwem-pgm does not use public rows") as seen:
        ignored = Synthesizer("mwem-pgm", epsilon=1, rounds=3, seed=0).fit(
            t.private, public=t.public, schema=t.schema)
    assert any("were ignored" in w for w in ignored.report["warnings"])
    assert not any(str(w.message) == PRIVATE_DOMAIN_WARNING for w in seen)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        used = Synthesizer("jam-pgm", epsilon=1, rounds=3).fit(
            t.private, public=t.public, schema=t.schema)
    assert not any("public rows" in str(w.message) for w in seen)
    assert used.report["warnings"] == []
    with pytest.warns(RunWarning, match="read off the private table"):
        read_off = Synthesizer("mwem-pgm", epsilon=1, rounds=3).fit(t.private)
    assert PRIVATE_DOMAIN_WARNING in read_off.report["warnings"]
    with pytest.warns(RunWarning, match="not fit for publication") as seen:
        ignored.write(tmp_path / "s.csv", tmp_path / "r.json")
    assert [str(w.message) for w in seen] == [SEEDED_WRITE_WARNING]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        used.write(tmp_path / "u.csv", tmp_path / "u.json")
    assert not seen
