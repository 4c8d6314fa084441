"""Reproduce the seed papers' headline comparisons on ``../shared/data``:
runs a resumable sweep (``synth_core.experiments``), then writes a plot (PNG)
and a Markdown table of workload error against epsilon (for the JAM figures
followed by the paper's findings checked on the means, see docs/experiments.md).

Figures:

* ``jam-adult``  JAM-PGM paper, Figure 1 (Adult, public rows with 25%, 50%,
  75% and 100% women; the private rows have 25%): JAM-PGM, PMW-Pub, GEM-Pub,
  AIM, GEM and the public-only line.
* ``jam-titanic``  JAM-PGM paper, Figure 2 (Titanic, a public table).
* ``vertical-adult``  vertical paper, Figure 2 (Adult with 25%, 50%, 75% of
  the columns public): AIM, vJAM-PGM, Conditional AIM, Conditional vJAM-PGM,
  error on the marginals with at least one private column.

All: all-3-way workload, delta 1e-9, bounded DP, the mechanisms' paper
defaults, epsilon in {0.1, 1, 10}, seeds 0-2. Each run is its own process
(``isolate``), so a long sweep stays bounded in memory. Each figure has its
folder ``benchmarks/results/<figure>/`` (``jam_adult``, ``jam_titanic``): the
per-run Parquet files in ``store/`` (kept out of git; stopping and restarting
resumes), the table of every stored run ``runs.jsonl`` (committed; see
:func:`runs_table`), and
``figure.md`` / ``figure.png``.
CPU time on this 2-core machine (one run at a time; see
docs/experiments.md): Titanic about 1 h for three seeds, JAM Adult 5.1 h
for three seeds (AIM and GEM run once: every split has the same private
table), vertical Adult about 7 h per seed, so run subsets with
``--mechanisms``/``--seeds`` and plot what is there.

    python benchmarks/reproduce.py jam-titanic
    python benchmarks/reproduce.py jam-adult --mechanisms jam-pgm aim --seeds 0
    python benchmarks/reproduce.py vertical-adult --plot-only

The PNG is an Altair figure drawn by vl-convert (``pip install -e ".[notebook]"``,
no browser needed); without them the table is still written. The figures are CURATOR-ONLY diagnostics (true errors).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import pandas as pd
from common import DATA, ROOT, emit, require_shared

from synth_core.experiments import DatasetSpec, MechanismSpec, ResultStore, Sweep, run_sweep

OUT = ROOT / "benchmarks" / "results"


def folder(figure: str) -> Path:
    """The figure's results folder (``jam-adult`` -> ``benchmarks/results/jam_adult``)."""
    return OUT / figure.replace("-", "_")


#: the committed run table of a folder's Parquet store, where ``runs.jsonl``
#: is another script's (``vertical_adult/runs.jsonl`` is benchmarks/vertical.py's)
STORE_TABLES = {"vertical_adult": "sweep_runs.jsonl"}


def runs_table(folder_path: Path) -> Path:
    """The committed table that stands for ``folder_path/store``."""
    return folder_path / STORE_TABLES.get(folder_path.name, "runs.jsonl")


def figure_store(figure: str) -> ResultStore:
    """The figure's per-run Parquet store (not committed; see :func:`export_runs`)."""
    return ResultStore(folder(figure) / "store")


def export_runs(store: ResultStore, path: Path) -> None:
    """Write every stored run, one JSON line each sorted by run id: the committed
    table that stands for the Parquet store."""
    runs = store.runs().sort_values("run_id")
    rows = [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
            for r in runs.to_dict("records")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def stored_runs(figure: str) -> pd.DataFrame:
    """The figure's runs: from the Parquet store when it holds any, else from
    the committed table (:func:`runs_table`)."""
    runs = figure_store(figure).runs()
    table_file = runs_table(folder(figure))
    if len(runs) or not table_file.exists():
        return runs
    return pd.read_json(table_file, lines=True, dtype=False)
EPSILONS = (0.1, 1.0, 10.0)
SETTINGS = {"delta": 1e-9, "workload": "all-3way", "neighbours": "bounded"}
#: vertical split: the first round(f * 15) columns are public (demographics first)
PUBLIC_ORDER = ["sex", "race", "age", "native-country", "marital-status", "relationship",
                "education", "education-num", "workclass", "occupation", "hours-per-week",
                "fnlwgt", "capital-gain", "capital-loss", "income>50K"]


def _split(name: str) -> DatasetSpec:
    folder = DATA / name
    return DatasetSpec(name, folder / "priv.csv", folder / "pub.csv", folder / "domain.json")


def _vertical(fraction: float) -> DatasetSpec:
    cols = tuple(PUBLIC_ORDER[:int(round(fraction * len(PUBLIC_ORDER)))])
    folder = DATA / "adult"
    return DatasetSpec(f"adult, {int(fraction * 100)}% columns public", folder / "adult.csv",
                       schema=folder / "domain.json", public_columns=cols)


def _plain(*names: str) -> tuple[MechanismSpec, ...]:
    return tuple(MechanismSpec(n, n) for n in names)


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
        title="Vertical paper, Figure 2: Adult, public columns (error on W')",
        datasets=lambda: [_vertical(f) for f in (0.25, 0.5, 0.75)],
        mechanisms=(MechanismSpec("aim", "aim"), MechanismSpec("vjam-pgm", "vjam-pgm"),
                    MechanismSpec("conditional-aim", "aim", {"conditional": True}),
                    MechanismSpec("conditional-vjam-pgm", "vjam-pgm", {"conditional": True})),
        metric="workload_error_private"),
}


def build_sweeps(figure: str, mechanisms=None, seeds=(0, 1, 2), epsilons=EPSILONS) -> list[Sweep]:
    """The figure's sweeps. A mechanism listed in ``private_only`` reads only the private
    table, which is the same in every split, so it runs on the first split alone and
    :func:`table` shows its result in every panel."""
    spec = FIGURES[figure]
    shared = spec.get("private_only", ())
    mechs = [m for m in spec["mechanisms"] if not mechanisms or m.label in mechanisms]
    datasets = tuple(spec["datasets"]())
    sweeps = []
    for data, group in ((datasets, [m for m in mechs if m.label not in shared]),
                        (datasets[:1], [m for m in mechs if m.label in shared])):
        if group:
            sweeps.append(Sweep(data, tuple(group), tuple(epsilons), tuple(seeds),
                                dict(SETTINGS), name=figure))
    return sweeps


def table(figure: str, runs: pd.DataFrame) -> list[dict]:
    """Mean, min and max error over seeds per (dataset, mechanism, epsilon); a private-only
    mechanism's runs (made on the first split) are shown under every split."""
    spec = FIGURES[figure]
    metric = spec["metric"]
    runs = runs[runs["status"] == "finished"]
    # only runs of the figure's current configuration: a run made with other
    # settings (e.g. AIM with 100 fit iterations per round, its old default)
    # stays in the store but is left out
    seeds = tuple(sorted({int(s) for s in runs["seed"]})) or (0,)
    current = {job.run_id for sweep in build_sweeps(figure, seeds=seeds) for job in sweep.jobs()}
    stale = runs[~runs["run_id"].isin(current)]
    if len(stale):
        print(f"{figure}: {len(stale)} stored runs of an older configuration left out "
              f"({', '.join(sorted(set(stale['mechanism'])))})", file=sys.stderr)
    runs = runs[runs["run_id"].isin(current)]
    datasets = [d.name for d in spec["datasets"]()]
    rows = []
    for (data, mech, eps), g in runs.groupby(["dataset", "mechanism", "epsilon"], sort=True):
        vals = [float(v) for v in g[metric] if v is not None]
        if not vals:
            continue
        row = {"mechanism": mech, "epsilon": float(eps), "seeds": len(vals),
               "mean": statistics.mean(vals), "min": min(vals), "max": max(vals),
               "cpu_seconds": statistics.mean(float(c) for c in g["cpu_seconds"])}
        shown_in = datasets if mech in spec.get("private_only", ()) else [data]
        rows += [dict(row, dataset=d) for d in shown_in]
    return rows


#: "close" in the JAM paper's "AIM close to JAM-PGM at epsilon 10": within this
#: fraction of JAM-PGM's error
CLOSE = 0.15
PUBLIC_DATA = ("jam-pgm", "pmw-pub", "gem-pub", "public-only")
PRIVATE_ONLY = ("aim", "gem")


def findings(figure: str, rows: list[dict]) -> list[dict]:
    """The seed paper's findings, checked on the table's means: one dict per
    finding with ``holds`` (None while a needed cell is missing) and its evidence."""
    means = {(r["dataset"], r["mechanism"], r["epsilon"]): r["mean"] for r in rows}
    ranges = {(r["dataset"], r["mechanism"], r["epsilon"]): (r.get("min"), r.get("max"))
              for r in rows}
    points = sorted({(d, e) for d, _, e in means})
    out = []
    if figure == "jam-adult":
        below, missing, margins = [], [], {}
        for d, e in points:
            need = [(d, m, e) for m in ("jam-pgm", "pmw-pub", "gem-pub")]
            if not all(k in means for k in need):
                missing.append(f"{d} eps {e:g}")
                continue
            jam, pmw, gem = (means[k] for k in need)
            below.append((f"{d} eps {e:g}", jam < min(pmw, gem)))
            (_, jam_max), (pmw_min, _), (gem_min, _) = (ranges[k] for k in need)
            if None not in (jam_max, pmw_min, gem_min):
                margins[f"{d} eps {e:g}"] = min(pmw_min, gem_min) - jam_max
        out.append(dict(finding="JAM-PGM below PMW-Pub and GEM-Pub at almost every point",
                        holds=None if missing or not below else
                        sum(ok for _, ok in below) >= len(below) - 1,
                        points_below=sum(ok for _, ok in below), points=len(below),
                        not_below=[p for p, ok in below if not ok], missing=missing,
                        # the best seed of PMW-Pub / GEM-Pub minus JAM-PGM's worst seed
                        # (positive: the seed ranges do not overlap)
                        worst_seed_margin=dict([min(margins.items(), key=lambda kv: kv[1])])
                        if margins else {}))
        pairs = {e: (means.get(("adult_pub100", "pmw-pub", e)), means.get(("adult_pub100", "jam-pgm", e)))
                 for _, e in points}
        full = {e: v for e, v in pairs.items() if None not in v}
        out.append(dict(finding="PMW-Pub much worse with the 100%-female public data "
                                "(at least twice JAM-PGM's error on adult_pub100)",
                        holds=None if len(full) < len(pairs) or not full else
                        all(pmw >= 2 * jam for pmw, jam in full.values()),
                        pmw_pub_over_jam_pgm={f"{e:g}": pmw / jam for e, (pmw, jam) in full.items()},
                        pmw_pub100_over_pmw_pub025={
                            f"{e:g}": pmw / means[("adult_pub025", "pmw-pub", e)]
                            for e, (pmw, _) in full.items() if ("adult_pub025", "pmw-pub", e) in means}))
        at10 = {d: (means.get((d, "aim", 10.0)), means.get((d, "jam-pgm", 10.0)))
                for d, e in points if e == 10.0}
        full = {d: v for d, v in at10.items() if None not in v}
        out.append(dict(finding=f"AIM close to JAM-PGM at epsilon 10 (within {CLOSE:.0%} of "
                                "JAM-PGM's error)",
                        holds=None if len(full) < len(at10) or not full else
                        all(abs(aim - jam) <= CLOSE * jam for aim, jam in full.values()),
                        aim_over_jam_pgm={d: aim / jam for d, (aim, jam) in full.items()}))
    elif figure == "jam-titanic":
        for d, e in points:
            if e > 1:
                continue
            pub = {m: means[(d, m, e)] for m in PUBLIC_DATA if (d, m, e) in means}
            priv = {m: means[(d, m, e)] for m in PRIVATE_ONLY if (d, m, e) in means}
            complete = len(pub) == len(PUBLIC_DATA) and len(priv) == len(PRIVATE_ONLY)
            out.append(dict(finding=f"public-data methods beat private-only ones ({d}, "
                                    f"epsilon {e:g})",
                            holds=(min(pub.values()) < min(priv.values())) if complete else None,
                            beating_every_private_only=sorted(
                                m for m, v in pub.items() if priv and v < min(priv.values())),
                            not_beating=sorted(m for m, v in pub.items()
                                               if priv and v >= min(priv.values()))))
    return out


def write_markdown(figure: str, rows: list[dict], path: Path) -> None:
    lines = [f"# {FIGURES[figure]['title']}", "",
             f"Workload error ({FIGURES[figure]['metric']}), mean over seeds [min, max]; "
             "CURATOR-ONLY diagnostics.", ""]
    if FIGURES[figure].get("private_only"):
        lines += [f"{', '.join(FIGURES[figure]['private_only'])} read only the private table, "
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
    checks = findings(figure, rows)
    if checks:
        lines += ["## The paper's findings, checked on the means above", ""]
        for f in checks:
            verdict = {True: "holds", False: "FAILS", None: "not yet checkable"}[f["holds"]]
            detail = "; ".join(f"{k}: {_short(v)}" for k, v in f.items()
                               if k not in ("finding", "holds") and v not in ([], {}))
            lines.append(f"- **{verdict}**: {f['finding']}" + (f" ({detail})" if detail else ""))
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def _short(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v:.2f}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def plot_figure(figure: str, rows: list[dict]):
    """One panel per dataset: mean metric against epsilon (log x), min-max bars
    over seeds; an Altair chart in the palette's mechanism colours (the
    public-only baseline dashed, in the public colour)."""
    import altair as alt

    from synth_core.palette import mechanism_scale

    domain, colours = mechanism_scale([r["mechanism"] for r in rows])
    data = alt.Data(values=[{k: r[k] for k in ("dataset", "mechanism", "epsilon", "mean",
                                                "min", "max")} for r in rows])
    base = alt.Chart().encode(
        x=alt.X("epsilon:Q", scale=alt.Scale(type="log"), title="epsilon"),
        color=alt.Color("mechanism:N", scale=alt.Scale(domain=domain, range=colours)))
    lines = base.mark_line(point=True).encode(
        y=alt.Y("mean:Q", title=FIGURES[figure]["metric"].replace("_", " ")),
        strokeDash=alt.condition("datum.mechanism == 'public-only'", alt.value([5, 3]),
                                 alt.value([1, 0])))
    bars = base.mark_rule().encode(y="min:Q", y2="max:Q")
    return alt.layer(lines, bars, data=data).properties(width=280, height=260).facet(
        column=alt.Column("dataset:N", title=None)).properties(title=FIGURES[figure]["title"])


def plot(figure: str, rows: list[dict], path: Path) -> bool:
    """The figure as a PNG (Altair through vl-convert, the [notebook] extra; no
    browser); False if not written."""
    from synth_core.errors import ConfigError
    from synth_core.notebook import save_figure

    try:
        save_figure(plot_figure(figure, rows), path, scale=1.25)
    except (ConfigError, ImportError) as exc:
        print(f"{exc}: no PNG written", file=sys.stderr)
        return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("figure", choices=list(FIGURES))
    ap.add_argument("--mechanisms", nargs="+", help="run only these (labels); plot all stored")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    ap.add_argument("--plot-only", action="store_true", help="plot what the store holds; run nothing")
    ap.add_argument("--in-process", action="store_true",
                    help="run in this process instead of one process per run")
    args = ap.parse_args()
    store = figure_store(args.figure)
    if not args.plot_only:
        require_shared()
        for sweep in build_sweeps(args.figure, args.mechanisms, args.seeds, args.epsilons):
            for row in run_sweep(sweep, store, isolate=not args.in_process, quiet=True,
                                 on_start=lambda job, i, n: print(
                                     f"run {i + 1}/{n}: {job.label()}", file=sys.stderr,
                                     flush=True)):
                emit(bench=f"reproduce-{args.figure}", **{k: row[k] for k in (
                    "dataset", "mechanism", "epsilon", "seed", "status", "workload_error",
                    "workload_error_private", "seconds", "cpu_seconds", "peak_rss_mb",
                    "error")})
    if len(store.runs()):
        export_runs(store, runs_table(folder(args.figure)))
    rows = table(args.figure, stored_runs(args.figure))
    for r in rows:
        emit(bench=f"reproduce-{args.figure}-summary", **r)
    for f in findings(args.figure, rows):
        emit(bench=f"reproduce-{args.figure}-finding", **f)
    out = folder(args.figure)
    out.mkdir(parents=True, exist_ok=True)
    write_markdown(args.figure, rows, out / "figure.md")
    if rows and plot(args.figure, rows, out / "figure.png"):
        print(f"wrote {out / 'figure.png'}", file=sys.stderr)


if __name__ == "__main__":
    main()
