"""Calibrate the run-time model (synth_core/run_time.py) on measured runs.

Every mechanism (with the conditional AIM variant and the public-only
baseline) runs on the bundled samples at a few epsilons, each run in a fresh
Python process. Per run it records CPU seconds (user + system of the child,
all threads), wall seconds, the load average, and the features the model
uses (rows, columns, domain cells, planned and actual rounds, per-round and
final fit iterations, public rows and columns). It then fits the model's
per-mechanism constants, writes them to ``synth_core/run_time_calibration.json``
and prints, per run, the model's estimate against the measured CPU seconds,
then the worst ratio (JSON lines).

    PYTHONPATH=$PWD nice -n 5 python benchmarks/runtime_model.py > runs.jsonl   # measure + fit
    PYTHONPATH=$PWD python benchmarks/runtime_model.py --refit runs.jsonl     # fit only
    PYTHONPATH=$PWD python benchmarks/runtime_model.py --check held_out.jsonl # out of sample
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: (label, mechanism, options, which public input it needs)
VARIANTS = (
    ("aim", "aim", {}, None),
    ("aim-conditional", "aim", {"conditional": True}, "columns"),
    ("jam-pgm", "jam-pgm", {}, "rows"),
    ("vjam-pgm", "vjam-pgm", {}, "columns"),
    ("vjam-pgm-conditional", "vjam-pgm", {"conditional": True}, "columns"),
    ("mwem-pgm", "mwem-pgm", {}, None),
    ("pmw-pub", "pmw-pub", {}, "rows"),
    ("vpmw", "vpmw", {}, "columns"),
    ("gem", "gem", {}, None),
    ("gem-pub", "gem-pub", {}, "rows"),
    ("vgem-pub", "vgem-pub", {}, "columns"),
    ("public-only", "public-only", {}, "rows"),
    ("mst", "mst", {}, None),
    ("privbayes-pgm", "privbayes-pgm", {}, None),
    ("independent", "independent", {}, None),
)
#: the public columns of each sample for the column-public variants
PUBLIC_COLUMNS = {"titanic": ["sex", "pclass"], "adult-pub025": ["sex", "race"]}
SAMPLES = ("titanic", "adult-pub025")
EPSILONS = (0.3, 3.0)


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def one_run(spec: dict) -> dict:
    """Run ``spec`` in this process; its measurements and features."""
    from synth_core import load_sample
    from synth_core.api import RunConfig, Synthesizer
    from synth_core.run_time import run_features

    sample = load_sample(spec["sample"])
    options = dict(spec["options"])
    public = sample.public
    if spec["public"] == "columns":
        options["public_columns"] = PUBLIC_COLUMNS[spec["sample"]]
        public = None
    elif spec["public"] is None:
        public = None
    cfg = RunConfig(mechanism=spec["mechanism"], epsilon=spec["epsilon"], seed=spec["seed"],
                    options=options, **spec.get("settings", {}))
    features = run_features(cfg, sample.schema, len(sample.private),
                            public_rows=0 if public is None else len(public),
                            public_columns=len(options.get("public_columns", ())))
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.perf_counter()
    synth = Synthesizer.from_config(cfg)
    for _ in synth.run(sample.private, public, schema=sample.schema):
        pass
    wall = time.perf_counter() - wall0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    rounds = len([e for e in synth.result.events if e.round > 0])
    cpu = (usage.ru_utime - usage0.ru_utime) + (usage.ru_stime - usage0.ru_stime)
    return {**features, "rounds_run": rounds, "run_cpu_s": round(cpu, 2),
            "run_wall_s": round(wall, 2)}


def measure(spec: dict, timeout: float) -> dict:
    """``spec`` in a fresh process: its record, with the child's CPU seconds
    (including import and start-up) and wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = loadavg()
    t0 = time.perf_counter()
    try:
        out = subprocess.run([sys.executable, __file__, "--one", json.dumps(spec)],
                             capture_output=True, text=True, timeout=timeout,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:   # killed and waited for: its CPU seconds so far count
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return {"bench": "runtime_model_timeout", **spec, "status": "timeout",
                "timeout_s": timeout, "cpu_s_at_least": round(cpu, 2), "loadavg_before": load}
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode != 0:
        return {**spec, "status": "failed", "error": out.stderr.strip().splitlines()[-1:]}
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    return {"bench": "runtime_model", **spec, "status": "ok", **rec,
            "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
            "loadavg_before": load, "loadavg_after": loadavg()}


def specs(samples, epsilons, variants, seed: int, settings: dict) -> list[dict]:
    out = []
    for label, mech, options, public in VARIANTS:
        if variants and label not in variants:
            continue
        for sample in samples:
            for eps in (epsilons if mech != "public-only" else epsilons[:1]):
                out.append({"variant": label, "mechanism": mech, "options": options,
                            "public": public, "sample": sample, "epsilon": eps, "seed": seed,
                            "settings": settings})
    return out


def ratio(estimate: float, actual: float) -> float:
    """How far off an estimate is, as a factor >= 1 either way."""
    return max(estimate, actual) / max(1e-9, min(estimate, actual))


def session_rules(record: dict, others: list[dict], calibration: dict) -> dict:
    """Estimates of ``record`` from the latest other run of the same variant on
    the same sample (another epsilon), as a session that finished that run could
    make them: ``per_round`` (its CPU seconds per round times the rounds
    ``record`` is predicted to make) and ``model_scaled`` (the model's estimate
    times what that run took over the model's estimate for it). Empty when there
    is no such run."""
    from synth_core import run_time

    same = [o for o in others if o is not record and o["variant"] == record["variant"]
            and o["sample"] == record["sample"]]
    if not same:
        return {}
    prior = same[-1]
    entry = run_time.calibration_entry(record, calibration)
    per_round = prior["run_cpu_s"] / max(1, prior["rounds_run"])
    factor = prior["run_cpu_s"] / max(1e-9, run_time.estimate_from_features(prior, calibration))
    return {"per_round": per_round * max(1.0, run_time.predicted_rounds(record, entry)),
            "model_scaled": factor * run_time.estimate_from_features(record, calibration)}


def other_sample(record: dict, calibration: dict) -> dict:
    """``model_other_sample``: the estimate of ``record`` by the model fitted
    without its sample's runs (how the model carries to a table it was not
    fitted on); empty when the variant was measured on this sample only."""
    from synth_core import run_time

    if run_time.model_key(record) not in calibration["models"]:
        return {}
    return {"model_other_sample": run_time.estimate_from_features(record, calibration)}


def with_workload_cells(records: list[dict]) -> list[dict]:
    """Records made before the model read the workload get its cells (the
    default workload of the sample's schema, as the runs used)."""
    from synth_core import load_sample, run_time
    from synth_core.api import RunConfig

    out = []
    for r in records:
        if "workload_cells" not in r:
            schema = load_sample(r["sample"]).schema
            r = {**r, "workload_cells": run_time.workload_cells(RunConfig().workload, schema)}
        out.append(r)
    return out


def unfinished(records: list[dict], calibration: dict) -> None:
    """Per run stopped at its timeout: the model's estimate against the CPU
    seconds it had used by then (a lower bound of what it needs)."""
    from synth_core import load_sample, run_time
    from synth_core.api import RunConfig

    for r in records:
        if r.get("bench") != "runtime_model_timeout" or "cpu_s_at_least" not in r:
            continue
        sample = load_sample(r["sample"])
        cfg = RunConfig(mechanism=r["mechanism"], epsilon=r["epsilon"], seed=r["seed"],
                        options=dict(r["options"]), **r.get("settings", {}))
        est = run_time.estimate_from_features(
            run_time.run_features(cfg, sample.schema, len(sample.private)), calibration)
        print(json.dumps({"bench": "runtime_model_unfinished", "variant": r["variant"],
                          "sample": r["sample"], "epsilon": r["epsilon"],
                          "timeout_s": r["timeout_s"], "cpu_s_at_least": r["cpu_s_at_least"],
                          "model_s": round(est, 2),
                          "underestimate_at_least": round(r["cpu_s_at_least"] / max(est, 1e-9), 2)}),
              flush=True)


def report(records: list[dict]) -> None:
    """Fit, write the calibration, print per run the model's estimate and the
    session rules' against the actual CPU seconds (sub-second figures count as
    0.5 s), then the worst ratio of each."""
    from synth_core import run_time

    ok = with_workload_cells([r for r in records if r.get("status") == "ok"])
    calibration = run_time.fit_calibration(ok)
    run_time.write_calibration(calibration)
    ratios: dict[str, list] = {"model": [], "model_other_settings": [],
                               "model_other_sample": [], "per_round": [], "model_scaled": []}
    without = {s: run_time.fit_calibration([r for r in ok if r["sample"] != s])
               for s in {r["sample"] for r in ok}}
    for r in ok:
        actual = max(0.5, r["run_cpu_s"])
        estimates = {"model": run_time.estimate_from_features(r, calibration),
                     **other_sample(r, without[r["sample"]]),
                     **session_rules(r, ok, calibration)}
        line = {"bench": "runtime_model_check", "variant": r["variant"], "sample": r["sample"],
                "epsilon": r["epsilon"], "rounds_run": r["rounds_run"],
                "run_cpu_s": r["run_cpu_s"], "run_wall_s": r["run_wall_s"]}
        for name, est in estimates.items():
            factor = ratio(max(0.5, est), actual)
            group = "model_other_settings" if name == "model" and not run_time.at_defaults(r) \
                else name
            ratios[group].append((factor, r))
            line[f"{name}_s"], line[f"{name}_ratio"] = round(est, 2), round(factor, 2)
        print(json.dumps(line), flush=True)
    unfinished(records, calibration)
    for name, pairs in ratios.items():
        worst = max(pairs, key=lambda x: x[0]) if pairs else (None, {})
        print(json.dumps({"bench": "runtime_model_summary", "estimate": name, "runs": len(pairs),
                          "within_2x": sum(1 for x, _ in pairs if x <= 2),
                          "worst_ratio": round(worst[0], 2) if worst[0] else None,
                          "worst_run": {k: worst[1].get(k) for k in ("variant", "sample", "epsilon")}}),
              flush=True)

def holdout(records: list[dict]) -> None:
    """Out-of-sample check: per run not used in the fit, the shipped
    calibration's estimate (predicted rounds, CPU seconds) against the run's
    measured CPU seconds (sub-second figures count as 0.5 s), then the worst
    ratio (JSON lines)."""
    from synth_core import run_time

    calibration = run_time.load_calibration()
    ok = with_workload_cells([r for r in records if r.get("status") == "ok"])
    factors = []
    for r in ok:
        entry = run_time.calibration_entry(r, calibration)
        est = run_time.estimate_from_features(r, calibration)
        factor = ratio(max(0.5, est), max(0.5, r["run_cpu_s"]))
        factors.append((factor, r))
        print(json.dumps({"bench": "runtime_model_holdout", "variant": r["variant"],
                          "sample": r["sample"], "epsilon": r["epsilon"], "seed": r["seed"],
                          "predicted_rounds": round(run_time.predicted_rounds(r, entry), 1),
                          "rounds_run": r["rounds_run"], "model_s": round(est, 2),
                          "run_cpu_s": r["run_cpu_s"], "model_ratio": round(factor, 2),
                          "loadavg_before": r["loadavg_before"]}), flush=True)
    worst = max(factors, key=lambda x: x[0])
    print(json.dumps({"bench": "runtime_model_holdout_summary", "runs": len(factors),
                      "within_2x": sum(1 for x, _ in factors if x <= 2),
                      "worst_ratio": round(worst[0], 2),
                      "worst_run": {k: worst[1][k] for k in ("variant", "sample", "epsilon")}}),
          flush=True)


def read_lines(paths: list[Path], benches: tuple[str, ...]) -> list[dict]:
    """The JSON lines of ``paths`` whose ``bench`` is one of ``benches``."""
    rows = [json.loads(line) for path in paths
            for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r.get("bench") in benches]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--refit", type=Path, nargs="+",
                    help="fit from recorded JSON lines (files), run nothing")
    ap.add_argument("--check", type=Path, nargs="+",
                    help="runs not used in the fit (recorded JSON lines): the shipped "
                         "calibration's estimate of each against its CPU seconds; runs nothing")
    ap.add_argument("--samples", nargs="+", default=list(SAMPLES))
    ap.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    ap.add_argument("--variants", nargs="*", default=[])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--settings", type=json.loads, default={},
                    help='run settings for every run, e.g. \'{"rounds": 8, "final_fit_iters": 300}\'')
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_run(json.loads(args.one))))
        return
    if args.refit:
        report(read_lines(args.refit, ("runtime_model", "runtime_model_timeout")))
        return
    if args.check:
        holdout(read_lines(args.check, ("runtime_model",)))
        return
    records = []
    for spec in specs(args.samples, args.epsilons, args.variants, args.seed, args.settings):
        rec = measure(spec, args.timeout)
        print(json.dumps(rec), flush=True)
        records.append(rec)
    report(records)


if __name__ == "__main__":
    main()
