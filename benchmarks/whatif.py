"""What-if accuracy: does the zero-cost prediction match the real workload error?

Target: the what-if curve for JAM-PGM on adult_pub025 predicts the real
workload error at epsilon 1 within a factor of 1.5.

Prediction: JAM-PGM (its defaults: 30 rounds, 80 MB, all-3way, delta 1e-9,
bounded DP) run on the ``public-rows`` stand-in built from the public table
only (see synth_core/whatif.py): the public rows rescaled to the private row
count n (public under bounded DP), with a stand-in public table made by
``--splits``: ``bootstrap`` (n_pub rows drawn with replacement from the public
rows) and/or ``halves`` (the public rows split into two disjoint halves).

Real: JAM-PGM on the private table with the public table (curator-only error),
read from ``results/peers/comparison.jsonl`` or ``results/whatif/runs.jsonl``;
with ``--run-real`` the missing ones are run here and recorded.

Every run is appended to ``results/whatif/runs.jsonl`` (``whatif-run`` and
``whatif-real`` lines; finished ones are skipped when the script runs again);
a ``whatif`` summary line per (data, epsilon, split) gives predicted, real,
ratio and seconds.

    nice -n 10 python benchmarks/whatif.py --data adult_pub025 --epsilons 1 --seeds 0 1 2 --run-real
    python benchmarks/whatif.py --summary

Live preview (``--live``): the workbench's what-if on a bundled sample
(titanic, its default mechanism and settings, 5 epsilons, 1 seed), as the
page sees it. Prints a ``whatif-live-point`` line per epsilon (the first
estimate, the estimate just before the point was measured, the measured
value, their relative errors, when it arrived) and a ``whatif-live`` line
(seconds to the first full set of estimates and to all measured, wall and
CPU, load average). Needs no shared data.

    nice -n 10 python benchmarks/whatif.py --live
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from common import ROOT, cpu_seconds, dataset, emit, public_proxy, require_shared

RESULTS = ROOT / "benchmarks" / "results"
OUT = RESULTS / "whatif" / "runs.jsonl"
MECHANISM = "jam-pgm"


def _lines(path):
    if not path.exists():
        return []
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def real_errors(data: str, epsilon: float) -> dict[int, float]:
    """Real JAM-PGM workload errors by seed, from the recorded results."""
    out = {}
    for r in _lines(RESULTS / "peers" / "comparison.jsonl") + _lines(OUT):
        if (r.get("bench") in ("comparison", "whatif-real") and r.get("data") == data
                and r.get("mechanism") == MECHANISM and float(r.get("epsilon")) == epsilon
                and not r.get("options")):
            out[int(r["seed"])] = float(r["workload_error"])
    return out


def predicted_runs(data: str, epsilon: float, split: str) -> dict[int, dict]:
    return {int(r["seed"]): r for r in _lines(OUT)
            if r.get("bench") == "whatif-run" and r["data"] == data and r["split"] == split
            and float(r["epsilon"]) == epsilon and r["mechanism"] == MECHANISM}


def record(rec: dict) -> None:
    emit(**rec)
    with OUT.open("a") as fh:
        fh.write(json.dumps(rec) + "\n")


def load(data: str):
    from synth_core.schema import load_schema
    from synth_core.tables import load_table

    priv, pub, domain = dataset(data)
    return load_table(priv), load_table(pub), load_schema(domain)


def run_real(data: str, epsilon: float, seed: int) -> None:
    from synth_core import Synthesizer

    private, public, schema = load(data)
    start, cpu = time.perf_counter(), cpu_seconds()
    res = Synthesizer(MECHANISM, epsilon=epsilon, delta=1e-9, workload="all-3way", seed=seed
                      ).fit(private, public, schema=schema)
    record(dict(bench="whatif-real", data=data, mechanism=MECHANISM, epsilon=epsilon, seed=seed,
                workload_error=res.curator_diagnostics().workload_error,
                public_rounds=public_rounds(res), seconds=time.perf_counter() - start,
                cpu_seconds=cpu_seconds() - cpu))


def public_rounds(result) -> int:
    """Rounds whose measurement came from the public rows (free)."""
    return sum(1 for e in result.events if e.round > 0 and e.source == "public")


def run_predicted(data: str, epsilon: float, seed: int, split: str) -> None:
    from synth_core.whatif import PublicBasis, run_config, standin_run

    private, public, schema = load(data)
    n = len(private)     # the row count only: public under bounded DP
    del private
    basis = PublicBasis(schema, n, f"n = {n:,} (bounded DP)", rows=public, rows_label=data)
    start, cpu = time.perf_counter(), cpu_seconds()
    res = standin_run(basis, run_config(MECHANISM, epsilon, seed), standin="public-rows",
                      public_split=split)
    record(dict(bench="whatif-run", data=data, mechanism=MECHANISM, epsilon=epsilon, split=split,
                seed=seed, predicted=res.curator_diagnostics().workload_error,
                public_rounds=public_rounds(res), seconds=time.perf_counter() - start,
                cpu_seconds=cpu_seconds() - cpu))


def female_shares(data: str) -> tuple[float | None, float | None]:
    """Share of sex code 0 (female) in the private and the public table (the Adult
    splits' bias; None for a table without a ``sex`` column)."""
    private, public, _ = load(data)
    if "sex" not in private.columns:
        return None, None
    return float((private["sex"] == 0).mean()), float((public["sex"] == 0).mean())


def summary(data: str, epsilon: float, split: str) -> dict | None:
    pred = predicted_runs(data, epsilon, split)
    real = real_errors(data, epsilon)
    if not pred:
        return None
    p = [r["predicted"] for r in pred.values()]
    mean_p = statistics.mean(p)
    mean_r = statistics.mean(real.values()) if real else None
    priv_f, pub_f = female_shares(data)
    ratio = mean_p / mean_r if mean_r else None
    return dict(bench="whatif", data=data, mechanism=MECHANISM, epsilon=epsilon, split=split,
                seeds=sorted(pred), predicted=mean_p, predicted_min=min(p), predicted_max=max(p),
                real=mean_r, real_seeds=sorted(real), ratio=ratio,
                within_1_5=None if ratio is None else bool(1 / 1.5 <= ratio <= 1.5),
                seconds=statistics.mean(r["seconds"] for r in pred.values()),
                public_proxy=public_proxy().get(data),
                private_female_share=None if priv_f is None else round(priv_f, 4),
                public_female_share=None if pub_f is None else round(pub_f, 4))


def loadavg() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def relative(estimate: float | None, measured: float) -> float | None:
    return None if estimate is None else (estimate - measured) / measured


def run_live(sample: str, epsilons: list[float], poll: float = 0.1) -> None:
    """Time the workbench's live what-if: estimates first, then measured points."""
    from synth_core.whatif import MEASURED
    from synth_core.workbench import Workbench

    wb = Workbench()
    wb.load_sample(sample)
    start, cpu = time.perf_counter(), cpu_seconds()
    worker = wb.start_what_if([wb.settings.mechanism], epsilons, seeds=1)
    first = arrived = None
    latest: dict[float, float] = {}
    history: dict[float, dict] = {}
    while True:
        done = worker.done          # read before the curves: the last point is then in them
        curves = wb.whatif.curves()
        points = curves[0].points if curves else []
        now = time.perf_counter() - start
        if first is None and len(points) == len(epsilons):
            first = {p.epsilon: p.mean for p in points}
            arrived = dict(seconds=now, cpu_seconds=cpu_seconds() - cpu, loadavg=loadavg())
        for p in points:
            if p.kind == MEASURED and p.epsilon not in history:
                history[p.epsilon] = dict(measured=p.mean, seconds=now,
                                          estimate_before=latest.get(p.epsilon))
            elif p.kind != MEASURED:
                latest[p.epsilon] = p.mean
        if done:
            break
        time.sleep(poll)
    finished = dict(seconds=time.perf_counter() - start, cpu_seconds=cpu_seconds() - cpu,
                    loadavg=loadavg())
    for e in sorted(history):
        h = history[e]
        emit(bench="whatif-live-point", data=sample, mechanism=wb.settings.mechanism, epsilon=e,
             first_estimate=first.get(e) if first else None, **h,
             first_estimate_rel_error=relative(first.get(e) if first else None, h["measured"]),
             estimate_before_rel_error=relative(h["estimate_before"], h["measured"]))
    emit(bench="whatif-live", data=sample, mechanism=wb.settings.mechanism, epsilons=epsilons,
         status=worker.status, failure=worker.failure and worker.failure.text(),
         first_estimates=arrived, all_measured=finished)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="+", default=["adult_pub025"])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[1.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--splits", nargs="+", default=["bootstrap", "halves"])
    ap.add_argument("--run-real", action="store_true",
                    help="run the real JAM-PGM where no recorded result exists")
    ap.add_argument("--summary", action="store_true", help="only print the summary lines")
    ap.add_argument("--live", action="store_true",
                    help="time the workbench's live what-if on --sample instead")
    ap.add_argument("--sample", default="titanic")
    args = ap.parse_args()
    if args.live:
        run_live(args.sample, args.epsilons if args.epsilons != [1.0] else
                 [0.1, 0.3, 1.0, 3.0, 10.0])
        return
    require_shared()
    for data in args.data:
        for eps in args.epsilons:
            if not args.summary:
                if args.run_real:
                    have = real_errors(data, eps)
                    for seed in args.seeds:
                        if seed not in have:
                            run_real(data, eps, seed)
                for split in args.splits:
                    have = predicted_runs(data, eps, split)
                    for seed in args.seeds:
                        if seed not in have:
                            run_predicted(data, eps, seed, split)
            for split in args.splits:
                line = summary(data, eps, split)
                if line is not None:
                    emit(**line)
                    if not args.summary:
                        with OUT.open("a") as fh:
                            fh.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
