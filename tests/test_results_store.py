"""The committed results store: one folder per experiment, each with a
manifest that says how to regenerate it, a README generated from that
manifest and the tables, plain file names, and no bulky per-run files."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT / "benchmarks"))
import results_readme  # noqa: E402

FOLDERS = sorted(p.parent for p in RESULTS.glob("*/manifest.json"))
MANIFEST_KEYS = {"title", "description", "commands", "code", "date", "machine", "files"}


def tracked(folder: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", str(folder)], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    return out.splitlines()


def test_every_folder_has_a_manifest():
    folders = sorted(p for p in RESULTS.iterdir() if p.is_dir())
    assert folders and folders == FOLDERS


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_manifest_names_the_commands_and_the_files_that_exist(folder):
    manifest = json.loads((folder / "manifest.json").read_text())
    assert MANIFEST_KEYS <= set(manifest)
    assert manifest["commands"] and manifest["code"]["produced_at"]   # moved_at: if it moved
    for name in manifest["files"]:
        assert (folder / name).exists(), f"{folder.name}/{name} listed but missing"
    for spec in manifest.get("tables", []):
        rows = results_readme.selected(results_readme.read_jsonl(folder / spec["file"]),
                                       spec.get("where", {}))
        assert rows, f"{folder.name}: table {spec['title']!r} selects no rows"


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_readme_is_the_generated_one(folder):
    assert (folder / "README.md").read_text() == results_readme.readme(folder), (
        f"run: python benchmarks/results_readme.py {folder.name}")


def test_plain_names_and_no_per_run_parquet_in_git():
    files = tracked(RESULTS)
    assert files
    assert not [f for f in files if f.endswith(".parquet")]
    assert not [f for f in files if "@" in f or " " in f]
    assert not [f for f in files if "/store/" in f]


def test_trace_index_covers_every_trace():
    for sub in ("traces", "curator_traces"):
        folder = RESULTS / "vertical_adult" / sub
        index = {r["file"] for r in results_readme.read_jsonl(folder / "index.jsonl")}
        files = {p.name for p in folder.glob("*.jsonl") if p.name != "index.jsonl"}
        assert index == files


@pytest.mark.skipif(not (ROOT.parent / "shared" / "data" / "adult_pub025").exists(),
                    reason="../shared/data (the figures' splits: their table builds the jobs)"
                           " is absent")
@pytest.mark.parametrize("figure", ["jam-adult", "jam-titanic"])
def test_the_committed_run_table_gives_the_committed_figure(figure, tmp_path):
    """``runs.jsonl`` stands for the (uncommitted) Parquet store: the figure's
    table computed from it is the committed ``figure.md``."""
    import reproduce

    folder = reproduce.folder(figure)
    runs = reproduce.stored_runs_table(figure)
    reproduce.write_markdown(figure, reproduce.table(figure, runs), tmp_path / "figure.md")
    reproduce.write_cost(reproduce.cost_rows(runs), tmp_path)   # as reproduce.py's main
    assert (tmp_path / "figure.md").read_text() == (folder / "figure.md").read_text()
    assert (tmp_path / "cost.jsonl").read_text() == (folder / "cost.jsonl").read_text()


def test_a_store_exports_to_its_run_table(tmp_path):
    """export_runs writes one JSON line per stored run, and the figure's table
    reads the same rows back."""
    import pandas as pd

    import reproduce
    from synth_core.experiments import RUN_COLUMNS, ResultStore

    store = ResultStore(tmp_path / "store")
    for i, err in enumerate((0.25, 0.75)):
        store.write({c: None for c in RUN_COLUMNS} | dict(
            run_id=f"r{i}", dataset="titanic", mechanism="aim", epsilon=1.0, seed=i,
            status="finished", workload_error=err, cpu_seconds=1.0))
    reproduce.export_runs(store, tmp_path / "runs.jsonl")
    rows = results_readme.read_jsonl(tmp_path / "runs.jsonl")
    assert [r["run_id"] for r in rows] == ["r0", "r1"]
    assert [r["workload_error"] for r in rows] == [0.25, 0.75]
    back = pd.read_json(tmp_path / "runs.jsonl", lines=True, dtype=False, precise_float=True)
    assert back["workload_error"].mean() == pytest.approx(0.5)
    assert reproduce.runs_table(tmp_path / "jam_adult") == tmp_path / "jam_adult" / "runs.jsonl"


def test_plotting_a_figure_without_runs_stops_and_writes_nothing(tmp_path, monkeypatch, capsys):
    import reproduce

    monkeypatch.setattr(reproduce, "OUT", tmp_path)
    monkeypatch.setattr(sys, "argv", ["reproduce.py", "aim-titanic", "--setting", "paper",
                                      "--plot-only"])
    with pytest.raises(SystemExit) as stop:
        reproduce.main()
    assert "no finished runs" in str(stop.value) and "without --plot-only" in str(stop.value)
    assert not list(tmp_path.rglob("figure.md")) and not list(tmp_path.rglob("cost.jsonl"))


def test_a_sweep_starts_from_the_runs_already_made(tmp_path, monkeypatch):
    """seed_store fills an empty store from the committed table (a fresh clone) and,
    in the paper setting, adopts the default setting's finished runs of the same jobs:
    the JAM-PGM paper's setting is our default, so their run ids coincide."""
    import pandas as pd

    import reproduce
    from synth_core.experiments import RUN_COLUMNS, DatasetSpec, MechanismSpec, ResultStore, Sweep

    monkeypatch.setattr(reproduce, "OUT", tmp_path / "results")
    data = tmp_path / "t.csv"
    pd.DataFrame({"a": [0, 1, 1, 0], "b": [1, 1, 0, 0]}).to_csv(data, index=False)
    d = DatasetSpec("t", data)

    def sweep(setting, epsilons):
        s = reproduce.figure_setting("jam-adult", setting)
        return Sweep((d,), (MechanismSpec("aim", "aim"),), epsilons, (0,), s["settings"],
                     name="jam-adult")

    (both,) = sweep("default", (1.0,)).jobs()
    paper_only, shared = sweep("paper", (0.03, 1.0)).jobs()
    assert shared.run_id == both.run_id != paper_only.run_id

    def write_table(setting, rows):
        path = reproduce.runs_table(reproduce.folder("jam-adult", setting))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({c: None for c in RUN_COLUMNS} | r) + "\n"
                                for r in rows))

    write_table("default", [dict(run_id=both.run_id, status="finished", workload_error=0.2),
                            dict(run_id="elsewhere", status="finished", workload_error=0.3)])
    # a float that pandas' default JSON parser reads one digit off
    write_table("paper", [dict(run_id="committed", status="finished",
                               workload_error=1.8041273087285359),
                          dict(run_id=paper_only.run_id, status="failed")])
    store = ResultStore(tmp_path / "store")
    paper = [sweep("paper", (0.03, 1.0))]
    assert reproduce.seed_store("jam-adult", "paper", store, paper) == 3
    runs = store.runs().set_index("run_id")
    assert set(runs.index) == {"committed", both.run_id, paper_only.run_id}
    assert runs.loc[both.run_id, "workload_error"] == 0.2
    assert runs.loc["committed", "workload_error"] == 1.8041273087285359   # bit for bit
    assert store.finished_ids() == {"committed", both.run_id}   # the failed run is run again
    assert reproduce.seed_store("jam-adult", "paper", store, paper) == 0
    # a finished default run replaces a failed one of the same job (and only once)
    write_table("default", [dict(run_id=paper_only.run_id, status="finished",
                                 workload_error=0.5)])
    assert reproduce.seed_store("jam-adult", "paper", store, paper) == 1
    assert store.finished_ids() == {"committed", both.run_id, paper_only.run_id}
    assert reproduce.seed_store("jam-adult", "paper", store, paper) == 0
    # a default table without run ids (vertical.py's) gives nothing and breaks nothing
    vertical = reproduce.runs_table(reproduce.folder("vertical-adult"))
    vertical.parent.mkdir(parents=True)
    vertical.write_text(json.dumps(dict(mechanism="aim", epsilon=1.0, cpu_seconds=1.0)) + "\n")
    assert reproduce.seed_store("vertical-adult", "paper", ResultStore(tmp_path / "v"),
                                paper) == 0


def test_missing_runs_lists_what_is_left_with_its_price(tmp_path):
    """--missing: the jobs without a finished run, per (panel, label, epsilon), priced
    at the label's finished runs at the nearest epsilon (log scale) over the setting's
    and the default setting's runs (the setting's on a tie), a default price scaled by
    the two settings' CPU ratio where both ran the label; unpriced when never run."""
    import pandas as pd

    import reproduce
    from synth_core.experiments import DatasetSpec, MechanismSpec, Sweep

    data = tmp_path / "t.csv"
    pd.DataFrame({"a": [0, 1, 1, 0], "b": [1, 1, 0, 0]}).to_csv(data, index=False)
    sweep = Sweep((DatasetSpec("t", data),), (MechanismSpec("aim", "aim"),
                                              MechanismSpec("gem", "gem"),
                                              MechanismSpec("mst", "mst")),
                  (0.1, 1.0, 10.0), (0, 1), name="jam-titanic")
    jobs = {(j.mechanism.label, j.config.epsilon, j.config.seed): j for j in sweep.jobs()}
    runs = pd.DataFrame([dict(run_id=jobs["aim", 1.0, 0].run_id, status="finished",
                              dataset="t", mechanism="aim", epsilon=1.0, cpu_seconds=10.0),
                         dict(run_id=jobs["aim", 10.0, 1].run_id, status="failed",
                              dataset="t", mechanism="aim", epsilon=10.0, cpu_seconds=99.0)])
    # the default setting's table as vertical.py writes it: no run_id, no status
    default = pd.DataFrame([dict(mechanism="gem", epsilon=0.3, cpu_seconds=30.0),
                            dict(mechanism="gem", epsilon=10.0, cpu_seconds=50.0),
                            dict(mechanism="gem", epsilon=10.0, cpu_seconds=1e6, failed=True),
                            dict(mechanism="aim", epsilon=10.0, cpu_seconds=40.0),
                            dict(mechanism="aim", epsilon=1.0, cpu_seconds=5.0)])
    entries = {(e["mechanism"], e["epsilon"]): e
               for e in reproduce.missing_runs("jam-titanic", "paper", [sweep], runs, default)}
    assert entries["aim", 1.0]["seeds"] == [1] and entries["aim", 10.0]["seeds"] == [0, 1]
    # the nearest epsilon wins whichever setting ran it; the setting's own on a tie;
    # a failed run never prices; a default price of a label the setting also ran is
    # scaled by the two settings' ratio at their common epsilon (aim at 1: 10 / 5)
    assert [entries["aim", e]["cpu_seconds_per_run"] for e in (0.1, 1.0, 10.0)] == \
        [10.0, 10.0, 40.0 * 2]
    assert [entries["aim", e]["priced_from"] for e in (0.1, 1.0, 10.0)] == \
        ["paper", "paper", "default"]
    assert [entries["aim", e]["scaled_by"] for e in (0.1, 1.0, 10.0)] == [None, None, 2.0]
    assert entries["aim", 0.1]["priced_at_epsilon"] == 1.0
    assert entries["gem", 1.0]["priced_from"] == "default"
    assert entries["gem", 1.0]["cpu_seconds_per_run"] == 30.0    # the setting ran no gem
    assert entries["gem", 1.0]["scaled_by"] is None
    assert entries["gem", 1.0]["priced_at_epsilon"] == 0.3
    assert entries["mst", 1.0]["cpu_seconds_per_run"] is None      # never run anywhere
    assert entries["gem", 10.0]["cpu_seconds_per_run"] == 50.0
    assert "--setting paper --datasets t --mechanisms aim --epsilons 10 --seeds 0 1" in \
        entries["aim", 10.0]["command"]
    # a label with a space reaches the command line quoted
    t5 = Sweep((DatasetSpec("t", data),), (MechanismSpec("gem-pub T=5", "gem-pub",
                                                         {"rounds": 5}),), (1.0,), (0,))
    (entry,) = reproduce.missing_runs("jam-titanic", "paper", [t5], runs, default)
    args = shlex.split(entry["command"])
    assert args[args.index("--mechanisms") + 1] == "gem-pub T=5"
    total = reproduce.missing_total(list(entries.values()))
    assert total == dict(runs=17, unpriced_runs=6,
                         cpu_seconds=10.0 * 3 + 80.0 * 2 + (30.0 * 2) * 2 + 50.0 * 2)


def test_a_default_price_is_scaled_at_the_common_epsilon_nearest_the_one_priced():
    """The CPU ratio that scales a default-setting price is the one at the epsilon both
    settings ran nearest the epsilon priced (here 10, not 0.1), since the ratio moves
    with epsilon (vJAM-PGM at T = 100 against T = 30: 3.9 at 0.1, 8.4 at 10)."""
    import pandas as pd

    import reproduce

    frame = lambda cpu: pd.DataFrame([dict(mechanism="m", epsilon=e, cpu_seconds=c)
                                      for e, c in cpu.items()])
    sources = {"paper": frame({0.1: 2.0, 10.0: 100.0}),
               "default": frame({0.1: 1.0, 1.0: 10.0, 10.0: 20.0})}
    priced = reproduce.price(sources, "panel", "m", 3.0)   # nearest run: default's at 1
    assert (priced["priced_from"], priced["priced_at_epsilon"]) == ("default", 1.0)
    assert priced["scaled_by"] == 100.0 / 20.0
    assert priced["cpu_seconds_per_run"] == 10.0 * 5.0


@pytest.mark.skipif(not (ROOT.parent / "shared" / "data" / "adult").exists(),
                    reason="../shared/data/adult (the figures' data) is absent")
def test_datasets_keeps_only_the_named_panels_runs():
    """--datasets NAME: only that panel's jobs; a private-only mechanism (plain AIM on
    the vertical paper grid, stored under the first split) runs only when the first
    split is named; a name the figure lacks stops with the panels it has."""
    import reproduce

    def cells(datasets):
        return sorted({(j.dataset.name, j.mechanism.label)
                       for s in reproduce.build_sweeps("vertical-adult", ["aim", "vjam-pgm"],
                                                       [0], [1.0], "paper", None, datasets)
                       for j in s.jobs()})

    half, quarter = "adult, 50% columns public", "adult, 25% columns public"
    assert cells([half]) == [(half, "vjam-pgm")]
    assert cells([quarter]) == [(quarter, "aim"), (quarter, "vjam-pgm")]
    assert len(cells(None)) == 4                        # AIM once, vJAM-PGM per split
    with pytest.raises(SystemExit, match="no panel named 'adult 50'.*'adult, 75% columns"):
        cells(["adult 50"])


@pytest.mark.skipif(not (ROOT.parent / "shared" / "data" / "adult").exists(),
                    reason="../shared/data/adult (the figures' data) is absent")
def test_plain_aim_runs_once_per_vertical_grid_where_its_error_ignores_the_split():
    """Plain AIM reads no public column: on W (the vertical paper setting) one run serves
    the three splits, and the table shows it under each; on W' (the default) every split
    scores its own marginals, so each split runs it. JAM's AIM and GEM run once in both."""
    import reproduce

    def aim_splits(figure, setting):
        return {d.name for s in reproduce.build_sweeps(figure, setting=setting)
                for d in s.datasets if "aim" in [m.label for m in s.mechanisms]}

    assert reproduce.private_only("vertical-adult", "paper") == ("aim",)
    assert reproduce.private_only("vertical-adult", "default") == ()
    assert len(aim_splits("vertical-adult", "paper")) == 1
    assert len(aim_splits("vertical-adult", "default")) == 3
    for setting in ("default", "paper"):
        assert reproduce.private_only("jam-adult", setting) == ("aim", "gem")
        assert len(aim_splits("jam-adult", setting)) == 1
    # the one run, stored under the first split, is every split's row
    (job,) = [j for s in reproduce.build_sweeps("vertical-adult", seeds=(0,), epsilons=(1.0,),
                                                setting="paper")
              for j in s.jobs() if j.mechanism.label == "aim"]
    run = dict(run_id=job.run_id, dataset=job.dataset.name, mechanism="aim", epsilon=1.0,
               seed=0, status="finished", workload_error=0.2, workload_error_private=0.3,
               cpu_seconds=5.0)
    import pandas as pd

    rows = reproduce.table("vertical-adult", pd.DataFrame([run]), "paper")
    assert sorted(r["dataset"] for r in rows) == [d.name for d, _ in
                                                  reproduce.panels("vertical-adult")]
    assert {r["mean"] for r in rows} == {0.2}
    assert reproduce.cpu_total("vertical-adult", rows, "paper") == (5.0, 1)
