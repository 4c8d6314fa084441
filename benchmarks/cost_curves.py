"""Cost curves of the counting backends: all 3-way marginals of an Adult-like table.

Generates Adult-like Parquet tables (the 15 columns and domain of
``../shared/data/adult/domain.json``; every column drawn independently from
the real Adult's 1-way marginal) of 10^5, 10^6 and 10^7 rows under /tmp, then,
per backend and size, in a fresh process (so that peak memory is that run's):

* ``setup_seconds``: opening the source and the first pass (memory: load the
  Parquet file with pandas and encode it; duckdb: encode into a table of codes
  and validate; spark: encode, persist and validate);
* ``count_seconds``: the 455 3-way marginals (the all-3-way candidate answers);
* ``peak_rss_mb``: peak resident memory of our process (Spark: also the JVM's);
* passes and bytes scanned (``CountStats``).

Then the log-log slope of count time against rows per backend, and the cost
targets. One JSON line per record (``--out`` keeps a copy); ``--plot`` draws
the figure as PNG and SVG (Altair through vl-convert, the ``[notebook]`` extra;
no browser). ``--from-runs`` draws it from a saved results file, running nothing.

    nice -n 10 .venv/bin/python benchmarks/cost_curves.py \
        --out benchmarks/results/cost_curves/runs.jsonl --plot benchmarks/results/cost_curves/plot.png
    .venv/bin/python benchmarks/cost_curves.py \
        --from-runs benchmarks/results/cost_curves/runs.jsonl --plot benchmarks/results/cost_curves/plot.png
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DATA, emit, peak_rss_mb  # noqa: E402

DOMAIN = DATA / "adult" / "domain.json"
ADULT = DATA / "adult" / "adult.csv"
WORKDIR = Path("/tmp/synth-cost-curves")
CHUNK = 1_000_000


def make_table(rows: int, path: Path, seed: int = 0) -> Path:
    """An Adult-like Parquet file of ``rows`` rows, written in chunks."""
    if path.exists():
        return path
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    domain = json.loads(DOMAIN.read_text())
    adult = pd.read_csv(ADULT)
    probs = {c: np.bincount(adult[c], minlength=s) / len(adult) for c, s in domain.items()}
    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".part")
    writer = None
    for start in range(0, rows, CHUNK):
        m = min(CHUNK, rows - start)
        chunk = pa.table({c: rng.choice(s, size=m, p=probs[c]).astype(np.int32)
                          for c, s in domain.items()})
        writer = writer or pq.ParquetWriter(tmp, chunk.schema)
        writer.write_table(chunk, row_group_size=m)
    writer.close()
    tmp.rename(path)
    return path


def _jvm_peak_mb() -> float | None:
    """Peak RSS (VmHWM) of this process's descendants (Spark's JVM)."""
    me, total, found = os.getpid(), 0.0, False
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    family, grew = {me}, True
    while grew:
        new = {p for p, pp in parents.items() if pp in family and p not in family}
        family |= new
        grew = bool(new)
    for pid in family - {me}:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) / 1024.0
                    found = True
        except OSError:
            continue
    return round(total, 1) if found else None


def measure_one(backend: str, rows: int, path: Path, batch: int | None) -> dict:
    """Run in a fresh process: set up ``backend`` on ``path`` and count all 3-ways."""
    from synth_core.backends import make_backend
    from synth_core.schema import Schema

    schema = Schema.from_json(json.loads(DOMAIN.read_text()))
    cliques = list(itertools.combinations(schema.names, 3))
    options = {} if batch is None else {"batch_size": batch}
    started = time.perf_counter()
    if backend == "spark":
        from synth_core.backends.spark_backend import spark_session
        session = spark_session("local[2]", **{"spark.driver.memory": "3g",
                                               "spark.sql.shuffle.partitions": "4"})
        options["spark"] = session
        session_seconds = time.perf_counter() - started
        started = time.perf_counter()
    else:
        session_seconds = 0.0
    counter = make_backend(backend, path, schema, **options)
    n = counter.n
    setup = time.perf_counter() - started
    started = time.perf_counter()
    counted = counter.marginals(cliques)
    count_seconds = time.perf_counter() - started
    assert n == rows and all(abs(v.sum() - rows) < 0.5 for v in counted.values())
    stats = counter.stats
    record = {
        "benchmark": "cost_curves", "kind": "run", "backend": backend, "rows": rows,
        "cliques": len(cliques), "setup_seconds": round(setup, 3),
        "count_seconds": round(count_seconds, 3), "total_seconds": round(setup + count_seconds, 3),
        "session_seconds": round(session_seconds, 3), "peak_rss_mb": round(peak_rss_mb(), 1),
        "jvm_peak_rss_mb": _jvm_peak_mb() if backend == "spark" else None,
        "passes": stats.passes, "bytes_scanned": stats.bytes_scanned, "queries": stats.queries,
        "counted_cliques": stats.cliques, "file_bytes": path.stat().st_size,
        "batch_size": getattr(counter, "batch_size", None), "cpus": os.cpu_count(),
    }
    if hasattr(counter, "close"):
        counter.close()
    return record


def measure_e2e(backend: str, rows: int, path: Path, public: Path, rounds: int) -> dict:
    """Run in a fresh process: a seeded JAM-PGM run (all-3-way workload) end to end."""
    from synth_core import Synthesizer
    from synth_core.schema import Schema

    schema = Schema.from_json(json.loads(DOMAIN.read_text()))
    options = None
    started = time.perf_counter()
    if backend == "spark":
        from synth_core.backends.spark_backend import spark_session
        options = {"spark": spark_session("local[2]", **{"spark.driver.memory": "3g",
                                                         "spark.sql.shuffle.partitions": "4"})}
    synth = Synthesizer("jam-pgm", epsilon=1.0, seed=0, rounds=rounds, workload="all-3way",
                        fit_iters=50, final_fit_iters=200)
    result = synth.fit(path, public, schema=schema, backend=backend, backend_options=options)
    seconds = time.perf_counter() - started
    stats = result.inputs.data.private.stats
    return {
        "benchmark": "cost_curves", "kind": "e2e", "mechanism": "jam-pgm", "backend": backend,
        "rows": rows, "rounds": rounds, "public_rows": result.inputs.data.public.n,
        "seconds": round(seconds, 3), "count_seconds": round(stats.seconds, 3),
        "passes": stats.passes, "bytes_scanned": stats.bytes_scanned,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "jvm_peak_rss_mb": _jvm_peak_mb() if backend == "spark" else None,
        "chosen": [list(m.clique) for m in result.measurements][-rounds:],
    }


def slope(points: list[tuple[int, float]]) -> float | None:
    pts = [(r, t) for r, t in points if t > 0]
    if len(pts) < 2:
        return None
    x = np.log10([r for r, _ in pts])
    y = np.log10([t for _, t in pts])
    return float(np.polyfit(x, y, 1)[0])


#: the figure's panels: (field, axis title); ``peak_mb`` is the run's peak
#: resident memory with the JVM's added for Spark
PANELS = (("count_seconds", "seconds, all 455 3-way marginals"),
          ("peak_mb", "peak resident memory, MiB (Spark: Python + JVM)"))


def plot_figure(records: list[dict]):
    """Counting time and peak memory against table rows per backend (``run``
    records), both axes logarithmic: one panel each, side by side, the backends
    in the palette's colours (:func:`synth_core.palette.mechanism_scale`)."""
    import altair as alt

    from synth_core.palette import mechanism_scale

    runs = [r for r in records if r.get("kind", "run") == "run"]
    domain, colours = mechanism_scale([r["backend"] for r in runs])
    values = [{"backend": r["backend"], "rows": r["rows"], "count_seconds": r["count_seconds"],
               "peak_mb": r.get("peak_rss_mb", 0) + (r.get("jvm_peak_rss_mb") or 0)}
              for r in runs]
    colour = alt.Color("backend:N", scale=alt.Scale(domain=domain, range=colours),
                       title="backend")
    ticks = sorted({r["rows"] for r in runs})
    panels = [alt.Chart(alt.Data(values=values)).mark_line(point=True).encode(
        x=alt.X("rows:Q", scale=alt.Scale(type="log"), title="rows",
                axis=alt.Axis(values=ticks, format="~s")),
        y=alt.Y(f"{field}:Q", scale=alt.Scale(type="log"), title=title),
        color=colour).properties(width=300, height=260) for field, title in PANELS]
    return alt.hconcat(*panels).properties(
        title="Counting all 3-way marginals of an Adult-like table, by backend")


def plot(records: list[dict], out: Path) -> bool:
    """The figure as ``out`` (PNG) and the SVG beside it (Altair through
    vl-convert, the [notebook] extra; no browser); False if not written."""
    from synth_core.errors import ConfigError
    from synth_core.notebook import save_figure

    chart = plot_figure(records)
    try:
        save_figure(chart, out, scale=1.5)
        save_figure(chart, out.with_suffix(".svg"))
    except (ConfigError, ImportError) as exc:
        print(f"{exc}: no figure written", file=sys.stderr)
        return False
    return True


def read_runs(path: Path) -> list[dict]:
    """The ``run`` records of a results file (one JSON object per line)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, filter(str.strip, lines)) if r.get("kind") == "run"]


def run_child(cmd, backend, rows, timeout, record, what):
    """Run one measurement in a child process; its last JSON line, or None (recorded why)."""
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        record(benchmark="cost_curves", kind="skipped", backend=backend, rows=rows,
               reason=f"{what}timed out after {timeout:.0f} s")
        return None
    lines = [l for l in res.stdout.splitlines() if l.startswith("{")]
    if res.returncode != 0 or not lines:
        record(benchmark="cost_curves", kind="failed", backend=backend, rows=rows,
               error=res.stderr.strip().splitlines()[-1:] or ["?"])
        return None
    return json.loads(lines[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1e5,1e6,1e7", help="comma-separated table sizes")
    parser.add_argument("--backends", default="memory,duckdb,spark")
    parser.add_argument("--spark-max-rows", type=float, default=1e6,
                        help="largest table for Spark (local mode on 2 cores)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--batch", type=int, default=None, help="cliques per pass (default: backend's)")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON lines here")
    parser.add_argument("--plot", type=Path, default=None,
                        help="PNG of time and memory against rows (and the SVG beside it)")
    parser.add_argument("--from-runs", type=Path, default=None, metavar="RUNS.jsonl",
                        help="draw --plot from this results file; run nothing")
    parser.add_argument("--e2e-rows", default="",
                        help="comma-separated sizes for end-to-end JAM-PGM runs (default: none)")
    parser.add_argument("--e2e-rounds", type=int, default=5)
    parser.add_argument("--e2e-one", nargs=4, metavar=("BACKEND", "ROWS", "PATH", "PUBLIC"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--one", nargs=3, metavar=("BACKEND", "ROWS", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.from_runs:
        if not args.plot:
            parser.error("--from-runs draws the figure: give --plot PATH.png")
        return 0 if plot(read_runs(args.from_runs), args.plot) else 1

    if args.one:
        backend, rows, path = args.one
        print(json.dumps(measure_one(backend, int(rows), Path(path), args.batch)), flush=True)
        return 0

    if args.e2e_one:
        backend, rows, path, public = args.e2e_one
        print(json.dumps(measure_e2e(backend, int(rows), Path(path), Path(public),
                                     args.e2e_rounds)), flush=True)
        return 0

    sizes = [int(float(r)) for r in args.rows.split(",") if r.strip()]
    backends = [b.strip() for b in args.backends.split(",")]
    WORKDIR.mkdir(parents=True, exist_ok=True)
    out = args.out.open("w") if args.out else None

    def record(**rec):
        emit(**rec)
        if out:
            out.write(json.dumps(rec) + "\n")
            out.flush()

    runs = []
    for rows in sizes:
        started = time.perf_counter()
        path = make_table(rows, WORKDIR / f"adult_like_{rows}.parquet")
        record(benchmark="cost_curves", kind="table", rows=rows, path=str(path),
               file_bytes=path.stat().st_size, seconds=round(time.perf_counter() - started, 2))
        for backend in backends:
            if backend == "spark" and rows > args.spark_max_rows:
                record(benchmark="cost_curves", kind="skipped", backend=backend, rows=rows,
                       reason=f"Spark local mode limited to {args.spark_max_rows:.0e} rows "
                              "(--spark-max-rows) on this 2-core machine")
                continue
            cmd = [sys.executable, __file__, "--one", backend, str(rows), str(path)]
            if args.batch:
                cmd += ["--batch", str(args.batch)]
            rec = run_child(cmd, backend, rows, args.timeout, record, "")
            if rec is not None:
                runs.append(rec)
                record(**rec)

    e2e_sizes = [int(float(r)) for r in args.e2e_rows.split(",") if r.strip()]
    if e2e_sizes:
        public = make_table(10_000, WORKDIR / "adult_like_public_10000.parquet", seed=1)
    for rows in e2e_sizes:
        path = make_table(rows, WORKDIR / f"adult_like_{rows}.parquet")
        for backend in backends:
            if backend == "spark" and rows > args.spark_max_rows:
                continue
            cmd = [sys.executable, __file__, "--e2e-one", backend, str(rows), str(path),
                   str(public), "--e2e-rounds", str(args.e2e_rounds)]
            rec = run_child(cmd, backend, rows, args.timeout, record, "e2e ")
            if rec is not None:
                record(**rec)

    for backend in backends:
        pts = sorted((r["rows"], r["count_seconds"]) for r in runs if r["backend"] == backend)
        setup = sorted((r["rows"], r["total_seconds"]) for r in runs if r["backend"] == backend)
        if pts:
            s, s_total = slope(pts), slope(setup)
            record(benchmark="cost_curves", kind="slope", backend=backend,
                   rows=[p[0] for p in pts], count_seconds=[p[1] for p in pts],
                   loglog_slope_count=None if s is None else round(s, 3),
                   loglog_slope_total=None if s_total is None else round(s_total, 3))

    by = {(r["backend"], r["rows"]): r for r in runs}
    mem6, duck7 = by.get(("memory", 10 ** 6)), by.get(("duckdb", 10 ** 7))
    targets = {"benchmark": "cost_curves", "kind": "targets"}
    if duck7:
        targets["duckdb_1e7_peak_rss_mb"] = duck7["peak_rss_mb"]
        targets["duckdb_1e7_under_2GiB"] = duck7["peak_rss_mb"] < 2048
    if duck7 and mem6:
        budget = 3 * 10 * mem6["count_seconds"]
        targets["duckdb_1e7_count_seconds"] = duck7["count_seconds"]
        targets["memory_1e6_count_seconds_x10_x3"] = round(budget, 2)
        targets["duckdb_1e7_within_3x_of_memory_scaled"] = duck7["count_seconds"] <= budget
        budget_total = 3 * 10 * mem6["total_seconds"]
        targets["duckdb_1e7_total_within_3x_of_memory_total_scaled"] = \
            duck7["total_seconds"] <= budget_total
    spark6 = by.get(("spark", 10 ** 6))
    if "spark" in backends:
        targets["spark_1e6_completed"] = spark6 is not None
    record(**targets)
    if args.plot and runs:
        record(benchmark="cost_curves", kind="plot", path=str(args.plot),
               written=plot(runs, args.plot))
    if out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
