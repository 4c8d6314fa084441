"""Reproduce the seed papers' headline comparisons on ``../shared/data``:
runs a resumable sweep (``synth_core.experiments``), then writes a plot (PNG)
and a Markdown table of workload error against epsilon, followed by the
paper's claims checked as it words them (benchmarks/paper_findings.py; see
docs/experiments.md).

Figures:

* ``jam-adult``  JAM-PGM paper, Figure 1 (Adult, public rows with 25%, 50%,
  75% and 100% women; the private rows have 25%): JAM-PGM, PMW-Pub, GEM-Pub,
  AIM, GEM and the public-only line.
* ``jam-titanic``  JAM-PGM paper, Figure 2 (Titanic, a public table).
* ``vertical-adult``  vertical paper, Figure 2 (Adult with 25%, 50%, 75% of
  the columns public): AIM, vJAM-PGM, Conditional AIM, Conditional vJAM-PGM,
  error on the marginals with at least one private column; the paper setting adds
  vGEM-Pub and vPMW and scores all 3-way marginals.
* ``vertical-reduced``  vertical paper, Figure 1: Adult (red.), its first 8
  columns, 6 of them public: AIM, vJAM-PGM, Conditional AIM, Conditional
  vJAM-PGM, vPMW, vGEM-Pub, error on W'.
* ``aim-titanic``  AIM paper, Figures 1 and 2 (f): Titanic (its 1,304 rows),
  one panel per workload (all 3-way marginals; the 3-way marginals containing
  Survived): AIM, MWEM+PGM, GEM, MST, PrivBayes+PGM, Independent.
* ``aim-adult``  AIM paper, Figures 1 and 2 (a): the same on Adult (48,842
  rows; target income>50K).

Default setting, all figures: all-3-way workload, delta 1e-9, bounded DP, the
mechanisms' own defaults, epsilon in {0.1, 1, 10}, seeds 0-2. ``--setting
paper`` uses each paper's stated delta, epsilons, seeds, rounds and neighbour
relation where our mechanism has it (vJAM-PGM and the conditional methods
support only "replace one record's private values"; :data:`PAPER`; results in
``<folder>/paper_setting/``). ``vertical-adult`` in the default setting runs
``benchmarks/vertical.py`` (its own runs file, table and plot). Each run is its own process
(``isolate``), so a long sweep stays bounded in memory; GEM-Pub's runs share their public
pre-training through ``store/pretrain_cache/`` (``SYNTH_PRETRAIN_CACHE``, unless set:
:mod:`synth_core.mechanisms.pretrain_cache`; the outputs are byte-identical). Each figure has its
folder ``benchmarks/results/<figure>/`` (``jam_adult``, ``jam_titanic``): the
per-run Parquet files in ``store/`` (kept out of git; stopping and restarting
resumes, and a fresh clone resumes from the committed table: :func:`seed_store`, which
also gives the paper setting the default setting's runs of the same jobs), the table of
every stored run ``runs.jsonl`` (committed; see :func:`runs_table`), and
``figure.md`` / ``figure.png``.
CPU time on this 2-core machine (one run at a time; see
docs/experiments.md): Titanic about 1 h for three seeds, JAM Adult 5.1 h
for three seeds (AIM and GEM run once: every split has the same private
table), vertical Adult about 7 h per seed, so run subsets with
``--mechanisms``/``--seeds`` and plot what is there.

    python benchmarks/reproduce.py jam-titanic
    python benchmarks/reproduce.py jam-adult --mechanisms jam-pgm aim --seeds 0
    python benchmarks/reproduce.py vertical-adult --plot-only
    python benchmarks/reproduce.py jam-titanic --setting paper --mechanisms "gem-pub T=1"
    python benchmarks/reproduce.py jam-adult --setting paper --missing   # what is left, priced

The PNG is an Altair figure drawn by vl-convert (``pip install -e ".[notebook]"``,
no browser needed); without them the table is still written. The figures are CURATOR-ONLY diagnostics (true errors).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import paper_findings
from common import DATA, ROOT, emit, require_shared, seed_cell

from synth_core.experiments import (FINISHED, RUN_COLUMNS, DatasetSpec, MechanismSpec,
                                    ResultStore, Sweep, run_sweep)
from synth_core.mechanisms.pretrain_cache import PRETRAIN_CACHE_ENV

OUT = ROOT / "benchmarks" / "results"


def folder(figure: str, setting: str = "default") -> Path:
    """The figure's results folder (``jam-adult`` -> ``benchmarks/results/jam_adult``;
    the paper setting's runs in its subfolder ``paper_setting``)."""
    base = OUT / figure.replace("-", "_")
    return base if setting == "default" else base / "paper_setting"


def runs_table(folder_path: Path) -> Path:
    """The committed table that stands for ``folder_path/store``."""
    return folder_path / "runs.jsonl"


#: figures whose default-setting runs, table and plot are another script's:
#: ``reproduce.py FIGURE`` runs that script instead (its own resumable runs file)
DEFAULT_SETTING_SCRIPTS = {"vertical-adult": "vertical.py"}


def delegate(figure: str, args: argparse.Namespace) -> int:
    """Run the figure's default setting through its own script (runs, then the figure)."""
    import subprocess

    script = [sys.executable, str(Path(__file__).with_name(DEFAULT_SETTING_SCRIPTS[figure]))]
    if args.workloads:
        raise SystemExit(f"{figure} has no workload panels: drop --workloads")
    if args.datasets:
        raise SystemExit(f"{figure}'s default setting runs through "
                         f"{DEFAULT_SETTING_SCRIPTS[figure]}, which takes no --datasets: drop "
                         f"it, or add --setting paper")
    grid = []
    for flag, values in (("--mechanisms", args.mechanisms), ("--epsilons", args.epsilons),
                         ("--seeds", args.seeds)):
        grid += [flag, *map(str, values)] if values else []
    if args.missing:
        return subprocess.call(script + grid + ["--missing"])
    if not args.plot_only:
        code = subprocess.call(script + grid)
        if code:
            return code
    return subprocess.call(script + ["--figure"])


def figure_store(figure: str, setting: str = "default") -> ResultStore:
    """The figure's per-run Parquet store (not committed; see :func:`export_runs`)."""
    return ResultStore(folder(figure, setting) / "store")


def export_runs(store: ResultStore, path: Path) -> None:
    """Write every stored run, one JSON line each sorted by run id: the committed
    table that stands for the Parquet store."""
    runs = store.runs().sort_values("run_id")
    rows = [json_row(r) for r in runs.to_dict("records")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def stored_runs(figure: str, setting: str = "default") -> pd.DataFrame:
    """The figure's runs: from the Parquet store when it holds any, else from
    the committed table (:func:`runs_table`)."""
    runs = figure_store(figure, setting).runs()
    return runs if len(runs) else stored_runs_table(figure, setting)


def seed_store(figure: str, setting: str, store: ResultStore, sweeps: list[Sweep]) -> int:
    """Fill ``store`` with the runs already made, so a sweep runs only what is missing:
    the committed table's rows the store has not finished (a fresh clone has the table,
    not the store), and, in the paper setting, the default setting's finished runs of a
    job of ``sweeps`` (the setting's whole grid, whatever subset is run now), with their
    per-marginal errors where the default store has them. A run id hashes the data and
    the whole run configuration (:class:`Job`), so a default run with the id of a paper
    job is that job's run: the JAM-PGM paper's setting is our default one, at more
    epsilons and seeds. A table without run ids (``vertical.py``'s) gives nothing.
    Returns how many rows were written."""
    stored, finished = set(store.runs()["run_id"]), store.finished_ids()
    written = 0
    for row in stored_runs_table(figure, setting).to_dict("records"):
        if row["run_id"] not in stored:
            store.write(json_row(row))
            written += 1
    if setting == "default":
        return written
    default, origin = finished_runs(stored_runs(figure, "default")), figure_store(figure)
    if "run_id" not in default:
        return written
    wanted = {job.run_id for sweep in sweeps for job in sweep.jobs()}
    for row in default.to_dict("records"):
        if row["run_id"] in wanted and row["run_id"] not in finished:
            store.write(json_row(row), origin.marginals_of(row["run_id"]))
            finished.add(row["run_id"])
            written += 1
    return written


def json_row(row: dict) -> dict:
    """A run row with its missing values (NaN) as ``None``."""
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}


def stored_runs_table(figure: str, setting: str = "default") -> pd.DataFrame:
    """The figure's committed run table (empty when there is none), its numbers exactly
    as written (pandas' default JSON float parser changes the last digit of some)."""
    path = runs_table(folder(figure, setting))
    if not path.exists() or not path.stat().st_size:
        return pd.DataFrame(columns=RUN_COLUMNS)
    return pd.read_json(path, lines=True, dtype=False, precise_float=True)


EPSILONS = (0.1, 1.0, 10.0)
SETTINGS = {"delta": 1e-9, "workload": "all-3way", "neighbours": "bounded"}
#: vertical split: the first round(f * 15) columns are public (demographics first)
PUBLIC_ORDER = ["sex", "race", "age", "native-country", "marital-status", "relationship",
                "education", "education-num", "workclass", "occupation", "hours-per-week",
                "fnlwgt", "capital-gain", "capital-loss", "income>50K"]


def _split(name: str) -> DatasetSpec:
    folder = DATA / name
    return DatasetSpec(name, folder / "priv.csv", folder / "pub.csv", folder / "domain.json")


def vertical_name(fraction: float) -> str:
    """The vertical figure's name for Adult with ``fraction`` of its columns public
    (the ``dataset`` of its runs; known without reading the data)."""
    return f"adult, {int(fraction * 100)}% columns public"


def _vertical(fraction: float) -> DatasetSpec:
    cols = tuple(PUBLIC_ORDER[:int(round(fraction * len(PUBLIC_ORDER)))])
    folder = DATA / "adult"
    return DatasetSpec(vertical_name(fraction), folder / "adult.csv",
                       schema=folder / "domain.json", public_columns=cols)


#: the vertical paper's Adult (red.) (sec. 4, App. B): "only the first 8 columns"
#: of Adult, of which d_pub = 6 are public (Figure 1: 75%); the paper does not say
#: which six: ours are the first six of those eight in PUBLIC_ORDER
REDUCED_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num",
                   "marital-status", "occupation", "relationship")
REDUCED_PUBLIC = tuple(c for c in PUBLIC_ORDER if c in REDUCED_COLUMNS)[:6]


def _adult_reduced() -> DatasetSpec:
    """Adult (red.): the first 8 columns of ``../shared/data/adult`` and their
    domain, written once into the figure's untracked store folder."""
    out = folder("vertical-reduced") / "store"
    data, schema = out / "adult_reduced.csv", out / "adult_reduced_domain.json"
    if not data.exists() or not schema.exists():
        out.mkdir(parents=True, exist_ok=True)
        src = DATA / "adult"
        domain = json.loads((src / "domain.json").read_text())
        schema.write_text(json.dumps({c: domain[c] for c in REDUCED_COLUMNS}))
        pd.read_csv(src / "adult.csv", usecols=list(REDUCED_COLUMNS))[
            list(REDUCED_COLUMNS)].to_csv(data, index=False)
    return DatasetSpec(paper_findings.REDUCED, data, schema=schema,
                       public_columns=REDUCED_PUBLIC)


def _plain(*names: str) -> tuple[MechanismSpec, ...]:
    return tuple(MechanismSpec(n, n) for n in names)


def _titanic_whole() -> DatasetSpec:
    """Titanic as the AIM paper uses it: all 1,304 rows, i.e. the JAM split's
    private 1,004 and public 300 rows stacked (same columns, same codes), written
    once into the figure's untracked store folder (isolated runs read files)."""
    path = folder("aim-titanic") / "store" / "titanic_1304.csv"
    if not path.exists():
        src = DATA / "titanic"
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.concat([pd.read_csv(src / "priv.csv"), pd.read_csv(src / "pub.csv")],
                  ignore_index=True).to_csv(path, index=False)
    return DatasetSpec("titanic", path, schema=DATA / "titanic" / "domain.json")


def _adult_whole() -> DatasetSpec:
    folder_ = DATA / "adult"
    return DatasetSpec("adult", folder_ / "adult.csv", schema=folder_ / "domain.json")


#: the AIM paper's mechanisms we implement (sec. 6.1; PrivMRF, RAP and the
#: Gaussian query-answering baseline are not implemented)
AIM_MECHANISMS = _plain("aim", "mwem-pgm", "gem", "mst", "privbayes-pgm", "independent")
#: the workload-agnostic ones, dotted in the paper's figures (dashed in ours)
AIM_AGNOSTIC = ("mst", "privbayes-pgm", "independent")


def _aim_figure(title: str, dataset, target: str) -> dict:
    """The AIM paper's Figures 1 and 2 on one dataset: a panel for all 3-way
    marginals and one for the 3-way marginals containing ``target``."""
    return dict(title=f"AIM paper, Figures 1 and 2: {title}", datasets=lambda: [dataset()],
                workloads={"all-3way": "all-3way", "target": f"target:{target}:3"},
                mechanisms=AIM_MECHANISMS, metric="workload_error", log_y=True,
                dashed=AIM_AGNOSTIC, note=AIM_NOTE, show_cpu=True)


AIM_NOTE = ("The paper's PrivMRF and RAP are not implemented here, nor its Gaussian "
            "baseline (query answers, no synthetic data): their curves are absent. Panels: "
            "'all-3way' is Figure 1, 'target' (every 3-way marginal containing the target "
            "column) Figure 2. docs/experiments.md, 'AIM paper, Figures 1 and 2', lists every "
            "difference from the paper's setting.")


#: the vertical figures' Private-PGM mechanisms, plain and conditional
VERTICAL_MECHANISMS = (MechanismSpec("aim", "aim"), MechanismSpec("vjam-pgm", "vjam-pgm"),
                       MechanismSpec("conditional-aim", "aim", {"conditional": True}),
                       MechanismSpec("conditional-vjam-pgm", "vjam-pgm", {"conditional": True}))
#: their error: on W' by default (the paper setting scores W), named in the title
VERTICAL_ERROR = dict(metric="workload_error_private",
                      metric_titles={"workload_error_private": "error on W'",
                                     "workload_error": "error on W"})

FIGURES = {
    "jam-adult": dict(
        title="JAM-PGM paper, Figure 1: Adult, biased public rows",
        datasets=lambda: [_split(f"adult_pub{p}") for p in ("025", "050", "075", "100")],
        mechanisms=_plain("jam-pgm", "pmw-pub", "gem-pub", "aim", "gem", "public-only"),
        # every split has the same private table (same bytes); these ignore the public rows
        private_only=("aim", "gem"),
        metric="workload_error"),
    "jam-titanic": dict(
        title="JAM-PGM paper, Figure 2: Titanic",
        datasets=lambda: [_split("titanic")],
        mechanisms=_plain("jam-pgm", "pmw-pub", "gem-pub", "aim", "gem", "public-only"),
        metric="workload_error"),
    "vertical-adult": dict(
        title="Vertical paper, Figure 2: Adult, public columns",
        datasets=lambda: [_vertical(f) for f in (0.25, 0.5, 0.75)],
        # the paper's Figure 2 has vGEM-Pub and leaves vPMW out ("poor scalability and
        # utility"); the issue asks for both beside the Private-PGM methods
        mechanisms=VERTICAL_MECHANISMS + _plain("vgem-pub", "vpmw"),
        # plain AIM ignores the split: one run serves all three where the error is on W
        # (the paper setting); on W' each split scores it on its own marginals
        private_only=("aim",), **VERTICAL_ERROR),
    "vertical-reduced": dict(
        title="Vertical paper, Figure 1: Adult (red.), 6 of 8 columns public",
        datasets=lambda: [_adult_reduced()],
        mechanisms=VERTICAL_MECHANISMS + _plain("vpmw", "vgem-pub"), **VERTICAL_ERROR),
    # AIM paper sec. 6.1: "all 3-way marginals involving some specified target
    # attribute [...] For the adult and titanic datasets, these are the income>50K
    # attribute and the Survived attribute"; one panel per workload
    "aim-titanic": _aim_figure("Titanic", _titanic_whole, "Survived"),
    "aim-adult": _aim_figure("Adult", _adult_whole, "income>50K"),
}


def panels(figure: str) -> list[tuple[DatasetSpec, dict]]:
    """The figure's panels: (dataset, its extra run settings). A figure with
    ``workloads`` has one panel per (dataset, workload), named
    ``"<dataset>, <workload label>"`` and run with that workload."""
    spec = FIGURES[figure]
    datasets = spec["datasets"]()
    if "workloads" not in spec:
        return [(d, {}) for d in datasets]
    return [(replace(d, name=f"{d.name}, {label}"), {"workload": w})
            for d in datasets for label, w in spec["workloads"].items()]


#: the JAM-PGM paper's setup (sec. 5, "Task Specification"; App. 2 and 3): epsilons,
#: delta 1e-9, all 3-way marginals, 5 seeds, bounded DP ("swapping a single record"),
#: 80 MB size limit, and GEM-Pub at the lowest and highest T that did well
JAM_PAPER = dict(settings={"delta": 1e-9, "workload": "all-3way", "neighbours": "bounded",
                           "max_model_size": 80.0},
                 epsilons=(0.03, 0.1, 0.31, 1.0, 3.16, 10.0), seeds=(0, 1, 2, 3, 4))
#: the AIM paper's setup (sec. 6.1): nine epsilons from 0.01 to 100 (half-decade steps),
#: delta 1e-9, five trials, add/remove neighbours (sec. 2, "adding or removing a single
#: record"), JT-SIZE 80 MB (sec. 6.5), every mechanism at its defaults. GEM and
#: PrivBayes+PGM are defined here only for bounded DP (replace one record), so they run so.
AIM_PAPER = dict(settings={"delta": 1e-9, "workload": "all-3way", "neighbours": "unbounded",
                           "max_model_size": 80.0},
                 per_mechanism={"gem": {"neighbours": "bounded"},
                                "privbayes-pgm": {"neighbours": "bounded"}},
                 epsilons=(0.01, 0.0316, 0.1, 0.316, 1.0, 3.16, 10.0, 31.6, 100.0),
                 seeds=(0, 1, 2, 3, 4))
#: the vertical paper's setting (both its Adult figures)
VERTICAL_PAPER = dict(settings={"delta": 1e-6, "workload": "all-3way", "neighbours": "bounded",
                                "rounds": 100},
                      epsilons=EPSILONS, seeds=(0, 1, 2),
                      per_mechanism={"aim": {"neighbours": "unbounded"}},
                      metric="workload_error")
#: the paper settings per figure, where they differ from the default (docs/experiments.md,
#: "Paper reproductions", lists every difference with the reason for our default)
PAPER = {
    # sec. 5.1: T = 5 and T = 150; sec. 5.2: T = 1 and T = 5; plain "gem-pub" (our
    # default T = 50) beside them, outside the paper's claims (benchmarks/paper_findings.py
    # checks the T = N labels)
    "jam-adult": dict(JAM_PAPER, gem_pub_rounds=paper_findings.JAM_GEM_PUB_ROUNDS["adult"],
                      gem_pub_default=True),
    "jam-titanic": dict(JAM_PAPER, gem_pub_rounds=paper_findings.JAM_GEM_PUB_ROUNDS["titanic"],
                        gem_pub_default=True),
    # vertical paper, App. B.2: delta 1e-6, T = 100 for every method; App. A: add/remove
    # neighbours (AIM runs so; vJAM-PGM and conditional generation support only
    # "replace one record's private values"); sec. 4: 3 repetitions; error on all
    # 3-way marginals W (the paper's 1- and 2-way marginals are not scored)
    "vertical-adult": VERTICAL_PAPER,
    "vertical-reduced": VERTICAL_PAPER,
    "aim-titanic": AIM_PAPER,
    "aim-adult": AIM_PAPER,
}
SETTING_NAMES = ("default", "paper")


def figure_setting(figure: str, setting: str = "default") -> dict:
    """The figure's runs under ``setting``: ``settings`` (RunConfig fields of every
    run), ``per_mechanism`` (fields of one mechanism label's runs), ``epsilons``,
    ``seeds``, ``mechanisms`` and the error ``metric`` of its table."""
    spec = FIGURES[figure]
    out = dict(settings=dict(SETTINGS), per_mechanism={}, epsilons=EPSILONS, seeds=(0, 1, 2),
               mechanisms=spec["mechanisms"], metric=spec["metric"])
    if setting == "default":
        return out
    if setting != "paper":
        raise ValueError(f"unknown setting {setting!r}; one of {SETTING_NAMES}")
    paper = PAPER[figure]
    out.update({k: v for k, v in paper.items() if k in out})
    if "gem_pub_rounds" in paper:
        out["mechanisms"] = tuple(
            v for m in spec["mechanisms"]
            for v in ([MechanismSpec(f"gem-pub T={t}", "gem-pub", {"rounds": t})
                       for t in paper["gem_pub_rounds"]]
                      + ([m] if paper.get("gem_pub_default") else [])
                      if m.label == "gem-pub" else [m]))
    return out


def private_only(figure: str, setting: str = "default") -> tuple[str, ...]:
    """The figure's mechanisms that read only the private table, the same in every
    split, and so run once, on the first split (``private_only``), where the setting's
    error does not depend on the split: on W' (``workload_error_private``) a split's
    public columns choose the marginals scored, so there every split runs its own."""
    if figure_setting(figure, setting)["metric"] != "workload_error":
        return ()
    return FIGURES[figure].get("private_only", ())


def build_sweeps(figure: str, mechanisms=None, seeds=None, epsilons=None,
                 setting: str = "default", workloads=None, datasets=None) -> list[Sweep]:
    """The figure's sweeps under ``setting`` (seeds and epsilons: the setting's unless
    given). A mechanism listed in ``private_only`` reads only the private table, which
    is the same in every split, so it runs on the first split alone and :func:`table`
    shows its result in every panel. A mechanism with its own run fields
    (``per_mechanism``) gets its own sweep, and so does each workload panel;
    ``workloads`` (panel labels) keeps only those panels, ``datasets`` (panel names, as
    the figure's table names them) only those panels' runs, so a private-only
    mechanism runs only when its first split is named."""
    run = figure_setting(figure, setting)
    names = [d.name for d, _ in panels(figure)]
    unknown = sorted(set(datasets or ()) - set(names))
    if unknown:
        raise SystemExit(f"{figure} has no panel named {', '.join(map(repr, unknown))}; "
                         f"its panels: {', '.join(map(repr, names))}")
    shared = private_only(figure, setting)
    mechs = [m for m in run["mechanisms"] if not mechanisms or m.label in mechanisms]
    by_extra: dict = {}
    for d, extra in panels(figure):
        if workloads and extra and d.name.rsplit(", ", 1)[-1] not in workloads:
            continue
        by_extra.setdefault(tuple(sorted(extra.items())), []).append(d)
    groups: dict = {}
    for m in mechs:
        own = run["per_mechanism"].get(m.label, {})
        groups.setdefault((m.label in shared, tuple(sorted(own.items()))), []).append(m)
    sweeps = []
    for extra, splits in by_extra.items():
        for (private, own), group in groups.items():
            kept = tuple(d for d in (splits[:1] if private else splits)
                         if not datasets or d.name in datasets)
            if kept:
                sweeps.append(Sweep(kept, tuple(group), tuple(epsilons or run["epsilons"]),
                                    tuple(seeds or run["seeds"]),
                                    dict(run["settings"], **dict(own), **dict(extra)),
                                    name=figure))
    return sweeps


def table(figure: str, runs: pd.DataFrame, setting: str = "default") -> list[dict]:
    """Mean, min and max error over seeds per (dataset, mechanism, epsilon); a private-only
    mechanism's runs (made on the first split) are shown under every split."""
    metric = figure_setting(figure, setting)["metric"]
    if runs.empty:
        return []
    runs = finished_runs(runs)
    # only runs of the figure's current configuration: a run made with other
    # settings (e.g. AIM with 100 fit iterations per round, its old default)
    # stays in the store but is left out
    seeds = tuple(sorted({int(s) for s in runs["seed"]})) or (0,)
    epsilons = tuple(sorted({float(e) for e in runs["epsilon"]})) or None
    current = {job.run_id for sweep in build_sweeps(figure, seeds=seeds, epsilons=epsilons,
                                                    setting=setting) for job in sweep.jobs()}
    stale = runs[~runs["run_id"].isin(current)]
    if len(stale):
        print(f"{figure}: {len(stale)} stored runs that are not jobs of the figure now left "
              f"out (an older configuration, or a private-only mechanism's run on a later "
              f"split: {', '.join(sorted(set(stale['mechanism'])))})", file=sys.stderr)
    runs = runs[runs["run_id"].isin(current)]
    datasets = [d.name for d, _ in panels(figure)]
    rows = []
    for (data, mech, eps), g in runs.groupby(["dataset", "mechanism", "epsilon"], sort=True):
        vals = [float(v) for v in g[metric] if v is not None]
        if not vals:
            continue
        row = {"mechanism": mech, "epsilon": float(eps), **seed_cell(vals),
               "cpu_seconds": statistics.mean(float(c) for c in g["cpu_seconds"])}
        shown_in = datasets if mech in private_only(figure, setting) else [data]
        rows += [dict(row, dataset=d) for d in shown_in]
    return rows


def cpu_total(figure: str, rows: list[dict], setting: str = "default") -> tuple[float, int]:
    """(sum of the runs' CPU seconds, number of runs) behind the table's rows; a
    private-only mechanism's runs, shown under every split, count once."""
    shared = private_only(figure, setting)
    seen, total, runs = set(), 0.0, 0
    for r in rows:
        key = (r["mechanism"], r["epsilon"], "" if r["mechanism"] in shared else r["dataset"])
        if key not in seen:
            seen.add(key)
            total += r["cpu_seconds"] * r["seeds"]
            runs += r["seeds"]
    return total, runs


def findings(figure: str, rows: list[dict], setting: str = "default") -> list[dict]:
    """The figure's paper's claims, checked as the paper words them on the table's
    rows (benchmarks/paper_findings.py): one dict per claim with its verdict, the
    points holding out of all, and every point's means, seed ranges and margin. The
    setting's epsilons count even where nothing has run: their points are missing."""
    return paper_findings.findings(figure, rows, figure_setting(figure, setting)["epsilons"])


def cost_rows(runs: pd.DataFrame) -> list[dict]:
    """CPU seconds (user + sys of each run's own process) of every finished run,
    per mechanism label and in all (label ``all``): runs, total, mean, min, max."""
    runs = finished_runs(runs)
    groups = [(m, g) for m, g in runs.groupby("mechanism", sort=True)] + [("all", runs)]
    return [{"mechanism": m, "runs": len(g), "cpu_total": float(g["cpu_seconds"].sum()),
             "cpu_mean": float(g["cpu_seconds"].mean()), "cpu_min": float(g["cpu_seconds"].min()),
             "cpu_max": float(g["cpu_seconds"].max())} for m, g in groups if len(g)]


def missing_runs(figure: str, setting: str, sweeps: list[Sweep], runs: pd.DataFrame,
                 default_runs: pd.DataFrame) -> list[dict]:
    """The jobs of ``sweeps`` without a finished run in ``runs`` (the setting's): one
    entry per (panel, mechanism label, epsilon) with the seeds left and the command that
    runs them, priced by :func:`price` from the finished runs of the setting and of the
    default setting (``cpu_seconds_per_run``, ``priced_at_epsilon``, ``priced_from``,
    ``scaled_by``)."""
    done = set(finished_runs(runs)["run_id"])
    cells: dict = {}
    for job in (j for sweep in sweeps for j in sweep.jobs() if j.run_id not in done):
        key = (job.dataset.name, job.mechanism.label, job.config.epsilon)
        cells.setdefault(key, []).append(job.config.seed)
    sources = {setting: finished_runs(runs), "default": finished_runs(default_runs)}
    flag = " --setting paper" if setting == "paper" else ""
    return [dict(dataset=panel, mechanism=label, epsilon=eps, seeds=sorted(seeds),
                 **price(sources, panel, label, eps),
                 command=f"python benchmarks/reproduce.py {figure}{flag} --datasets "
                         f"{shlex.quote(panel)} --mechanisms {shlex.quote(label)} "
                         f"--epsilons {eps:g} --seeds " + " ".join(map(str, sorted(seeds))))
            for (panel, label, eps), seeds in cells.items()]


def price(sources: dict, panel: str, label: str, eps: float) -> dict:
    """The mean CPU seconds of ``label``'s finished runs at the epsilon nearest ``eps`` on
    a log scale, over every source (setting name -> finished runs, the setting being
    priced first), the first source winning a tie; runs of the same panel only, where the
    source has any. A price taken from another source is scaled by the CPU ratio of the
    first source to it at their common epsilon nearest ``eps`` (``scaled_by``, ``None``
    when unscaled): vJAM-PGM at the vertical paper's T = 100 takes 3.9 to 8.4 times the
    CPU of the default's T = 30, depending on epsilon, so the price stays rough, and
    rougher where the runs are of older code. ``None`` prices when no source has run
    the label."""
    means = {}
    for name, frame in sources.items():
        mine = frame[frame["mechanism"] == label]
        if "dataset" in mine and (mine["dataset"] == panel).any():
            mine = mine[mine["dataset"] == panel]
        means[name] = {float(e): float(cpu.mean())
                       for e, cpu in mine.groupby("epsilon")["cpu_seconds"]}
    candidates = [(abs(math.log(e / eps)), order, name, e)
                  for order, (name, by_eps) in enumerate(means.items()) for e in by_eps]
    if not candidates:
        return dict(cpu_seconds_per_run=None, priced_at_epsilon=None, priced_from=None,
                    scaled_by=None)
    _, _, name, e = min(candidates)
    own = next(iter(means))
    common = sorted(set(means[own]) & set(means[name]), key=lambda c: abs(math.log(c / eps)))
    scale = means[own][common[0]] / means[name][common[0]] if name != own and common \
        else None
    return dict(cpu_seconds_per_run=means[name][e] * (scale or 1.0), priced_at_epsilon=e,
                priced_from=name, scaled_by=scale)


def finished_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The finished rows of a run table: ``status`` finished, or, in a table without
    ``status`` (``vertical.py``'s), every row not marked ``failed``."""
    if "status" in runs:
        return runs[runs["status"] == FINISHED]
    return runs[~runs["failed"].fillna(False).astype(bool)] if "failed" in runs else runs


def missing_total(entries: list[dict]) -> dict:
    """How many runs are missing and what the priced ones would cost in all."""
    priced = [e for e in entries if e["cpu_seconds_per_run"] is not None]
    return dict(runs=sum(len(e["seeds"]) for e in entries),
                unpriced_runs=sum(len(e["seeds"]) for e in entries if e not in priced),
                cpu_seconds=sum(e["cpu_seconds_per_run"] * len(e["seeds"]) for e in priced))


def write_cost(costs: list[dict], out: Path) -> None:
    """``out/cost.jsonl`` and a "CPU cost" section appended to ``out/figure.md``."""
    (out / "cost.jsonl").write_text("".join(json.dumps(c) + "\n" for c in costs),
                                    encoding="utf-8")
    lines = ["", "## CPU cost", "", "CPU seconds of each finished run's own process "
             "(user + sys), summed per mechanism.", "",
             "| mechanism | runs | CPU s total | CPU s per run: mean [min, max] |", "|---|---|---|---|"]
    lines += [f"| {c['mechanism']} | {c['runs']} | {c['cpu_total']:.0f} | {c['cpu_mean']:.1f} "
              f"[{c['cpu_min']:.1f}, {c['cpu_max']:.1f}] |" for c in costs]
    with (out / "figure.md").open("a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def figure_title(figure: str, setting: str = "default") -> str:
    """The figure's title, naming its error where the figure has several, and the setting."""
    spec = FIGURES[figure]
    metric = spec.get("metric_titles", {}).get(figure_setting(figure, setting)["metric"])
    return (spec["title"] + (f" ({metric})" if metric else "")
            + (" (the paper's setting)" if setting == "paper" else ""))


def write_markdown(figure: str, rows: list[dict], path: Path, setting: str = "default") -> None:
    metric = figure_setting(figure, setting)["metric"]
    title = figure_title(figure, setting)
    lines = [f"# {title}", "", f"Workload error ({metric}), mean over seeds [min, max]; "
             "CURATOR-ONLY diagnostics.", ""]
    if FIGURES[figure].get("show_cpu"):
        cpu, n_runs = cpu_total(figure, rows, setting)
        lines += [f"CPU: {cpu:,.0f} s, the sum of the {n_runs} runs' own CPU seconds (each "
                  "in its process, without the process start).", ""]
    if FIGURES[figure].get("note"):
        lines += [FIGURES[figure]["note"], ""]
    shared = private_only(figure, setting)
    if shared:
        lines += [f"{', '.join(shared)} read only the private table, "
                  "which is the same file in every split: they ran once and are repeated in "
                  "each split's table.", ""]
    for data in sorted({r["dataset"] for r in rows}):
        sub = [r for r in rows if r["dataset"] == data]
        epsilons = sorted({r["epsilon"] for r in sub})
        lines += [f"## {data}", "", "| mechanism | " + " | ".join(f"ε = {e:g}" for e in epsilons)
                  + " |", "|---" * (len(epsilons) + 1) + "|"]
        for mech in sorted({r["mechanism"] for r in sub}):
            cells = []
            for e in epsilons:
                hit = [r for r in sub if r["mechanism"] == mech and r["epsilon"] == e]
                cells.append(f"{hit[0]['mean']:.4f} [{hit[0]['min']:.3f}, {hit[0]['max']:.3f}] "
                             f"(n={hit[0]['seeds']})" if hit else "–")
            lines.append(f"| {mech} | " + " | ".join(cells) + " |")
        lines.append("")
    checks = findings(figure, rows, setting)
    if checks:
        lines += ["## The paper's claims, checked on the table above", "",
                  f"On {metric}; each claim's quantifier applies to the "
                  "means, with no tolerance (benchmarks/paper_findings.py). ✓/✗ per point; "
                  "[min, max] over seeds; margin = claimed-higher mean - claimed-lower mean.",
                  ""]
        lines += [paper_findings.render(f) for f in checks]
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def plot_figure(figure: str, rows: list[dict], setting: str = "default"):
    """One panel per dataset: mean metric against epsilon (log x; log y where the
    figure says ``log_y``), min-max bars over seeds; an Altair chart in the
    palette's mechanism colours. The figure's ``dashed`` mechanisms (default:
    the public-only baseline) are dashed lines."""
    import altair as alt

    from synth_core.palette import mechanism_scale

    domain, colours = mechanism_scale([r["mechanism"] for r in rows])
    data = alt.Data(values=[{k: r[k] for k in ("dataset", "mechanism", "epsilon", "mean",
                                                "min", "max")} for r in rows])
    base = alt.Chart().encode(
        x=alt.X("epsilon:Q", scale=alt.Scale(type="log"), title="epsilon"),
        color=alt.Color("mechanism:N", scale=alt.Scale(domain=domain, range=colours)))
    spec = FIGURES[figure]
    dashed = " || ".join(f"datum.mechanism == '{m}'" for m in spec.get("dashed", ("public-only",)))
    y_scale = alt.Scale(type="log") if spec.get("log_y") else alt.Undefined
    lines = base.mark_line(point=True).encode(
        y=alt.Y("mean:Q", title=figure_setting(figure, setting)["metric"].replace("_", " "),
                scale=y_scale),
        strokeDash=alt.condition(dashed, alt.value([5, 3]), alt.value([1, 0])))
    bars = base.mark_rule().encode(y=alt.Y("min:Q", scale=y_scale), y2="max:Q")
    return alt.layer(lines, bars, data=data).properties(width=280, height=260).facet(
        column=alt.Column("dataset:N", title=None)).properties(title=figure_title(figure, setting))


def plot(figure: str, rows: list[dict], path: Path, setting: str = "default") -> bool:
    """The figure as a PNG (Altair through vl-convert, the [notebook] extra; no
    browser); False if not written."""
    from synth_core.errors import ConfigError
    from synth_core.notebook import save_figure

    try:
        save_figure(plot_figure(figure, rows, setting), path, scale=1.25)
    except (ConfigError, ImportError) as exc:
        print(f"{exc}: no PNG written", file=sys.stderr)
        return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("figure", choices=list(FIGURES))
    ap.add_argument("--mechanisms", nargs="+", help="run only these (labels); plot all stored")
    ap.add_argument("--setting", choices=SETTING_NAMES, default="default",
                    help="'paper': the paper's delta, epsilons, seeds, rounds and neighbour "
                         "relation where it states them (results in FOLDER/paper_setting/; "
                         "docs/experiments.md lists every difference)")
    ap.add_argument("--seeds", nargs="+", type=int, help="default: the setting's")
    ap.add_argument("--epsilons", nargs="+", type=float, help="default: the setting's")
    ap.add_argument("--workloads", nargs="+",
                    help="run only these panels' workloads (labels, e.g. all-3way target; "
                         "figures with workload panels)")
    ap.add_argument("--datasets", nargs="+",
                    help="run only these panels (names as in the figure's table, e.g. "
                         "'adult, 50%% columns public'; --missing prints them)")
    ap.add_argument("--plot-only", action="store_true", help="plot what the store holds; run nothing")
    ap.add_argument("--missing", action="store_true",
                    help="list the setting's runs still to do, with commands, priced at the CPU "
                         "seconds of the mechanism's finished runs at the nearest epsilon "
                         "(this setting's, or the default setting's scaled by the two "
                         "settings' CPU ratio where both ran it); run nothing")
    ap.add_argument("--in-process", action="store_true",
                    help="run in this process instead of one process per run")
    args = ap.parse_args()
    fig, setting = args.figure, args.setting
    if setting == "default" and fig in DEFAULT_SETTING_SCRIPTS:
        raise SystemExit(delegate(fig, args))
    store = figure_store(fig, setting)
    if args.missing:
        require_shared()
        entries = missing_runs(fig, setting, build_sweeps(
            fig, args.mechanisms, args.seeds, args.epsilons, setting, args.workloads,
            args.datasets),
            stored_runs(fig, setting), stored_runs(fig))
        for entry in entries:
            emit(bench=f"reproduce-{fig}-missing", setting=setting, **entry)
        emit(bench=f"reproduce-{fig}-missing-total", setting=setting, **missing_total(entries))
        return
    if not args.plot_only:
        require_shared()
        sweeps = build_sweeps(fig, args.mechanisms, args.seeds, args.epsilons, setting,
                              args.workloads, args.datasets)
        # GEM-Pub's public pre-training, shared by the figure's runs of both settings
        os.environ.setdefault(PRETRAIN_CACHE_ENV, str(folder(fig) / "store" / "pretrain_cache"))
        adopted = seed_store(fig, setting, store, build_sweeps(fig, setting=setting))
        if adopted:
            print(f"{adopted} runs already made (committed table, or the same run in the "
                  f"default setting) written into {store.root}", file=sys.stderr)
        for sweep in sweeps:
            for row in run_sweep(sweep, store, isolate=not args.in_process, quiet=True,
                                 on_start=lambda job, i, n: print(
                                     f"run {i + 1}/{n}: {job.label()}", file=sys.stderr,
                                     flush=True)):
                emit(bench=f"reproduce-{fig}", setting=setting, **{k: row[k] for k in (
                    "dataset", "mechanism", "epsilon", "seed", "status", "workload_error",
                    "workload_error_private", "seconds", "cpu_seconds", "peak_rss_mb",
                    "error")})
    out = folder(fig, setting)
    out.mkdir(parents=True, exist_ok=True)
    if len(store.runs()):
        export_runs(store, runs_table(out))
    rows = table(fig, stored_runs(fig, setting), setting)
    if not rows:
        raise SystemExit(f"{fig} ({setting} setting): no finished runs in {store.root} or "
                         f"{runs_table(out)}; run without --plot-only first (nothing written)")
    for r in rows:
        emit(bench=f"reproduce-{fig}-summary", setting=setting, **r)
    for f in findings(fig, rows, setting):
        emit(bench=f"reproduce-{fig}-finding", setting=setting, **f)
    write_markdown(fig, rows, out / "figure.md", setting)
    write_cost(cost_rows(stored_runs(fig, setting)), out)
    if rows and plot(fig, rows, out / "figure.png", setting):
        print(f"wrote {out / 'figure.png'}", file=sys.stderr)

if __name__ == "__main__":
    main()
