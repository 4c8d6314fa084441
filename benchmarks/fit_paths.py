"""Fit paths: numpy mirror descent against the compiled JAX program (JSON lines).

Three parts:

* ``kind=fit``: CPU seconds (user+sys, this process) of one cold fit of a new
  clique structure on each path, over a range of junction-tree sizes (a
  chain of 3-way cliques over columns of one size; noisy counts, the
  engine's per-round settings: at most 1000 steps, tol 1e-4). JAX is
  imported before the first timing; a compiled fit includes its compile,
  ``cpu_s_same_structure_again`` is a second fit of the same structure (the
  compiled program reused: what a repeated measurement costs).
  On such chains every junction-tree node is a measured clique, so the
  factored oracle has nothing to save; ``kind=captured`` below measures the
  Adult models that calibrate the fit-path cost model
  (:func:`synth_core.model.fit_costs`).
* ``kind=run``: the Titanic sample end to end (``synth run``) in a fresh
  process, CPU seconds (user+sys of the child) as the median of ``--repeats``
  runs, once with the compiled path forced (``SYNTH_FIT_PATH=jax``) and once
  as chosen (``auto``), with the workload error from the curator diagnostics.

* ``kind=captured`` (``--captured DIR``): fits of real Adult models, pickled by
  ``ADULT_SPEED_CAPTURE=DIR benchmarks/adult_speed.py``: per-call CPU ms of the
  two numpy oracles (``TreeOracle``, ``FactoredOracle``) on the fit's starting
  point, the numpy fit with the captured settings (fits of at most
  ``--max-numpy-steps`` steps) against the captured fit's CPU seconds and path,
  and the largest difference of the fitted marginals; with ``--jax`` also a
  compiled fit of the structure, first (with its compile) and again. Each
  line also gives the fit-path cost model's estimates for the fit run cold
  (``estimated_factored_ms`` per oracle call, ``estimated_numpy_s``,
  ``estimated_jax_s``) and the path it would choose (``cold_choice``).
* ``kind=convergence`` (``--captured DIR --convergence N [N ...]``): how far a
  captured fit is from converged. The fit's structure is fitted compiled,
  from the captured warm start, for each step count N with the convergence
  test off (tol 0): the loss, its excess over the loss after the largest N,
  the relative improvement of the last 50-step block (what the captured
  ``tol`` is compared with), and the largest L1 distance, as a share of the
  records, between a clique's fitted marginal and the one after the largest N.

Usage: ``PYTHONPATH=. python benchmarks/fit_paths.py [--repeats 3] [--skip-fits] [--skip-runs]
[--captured DIR [--jax | --convergence N [N ...]] [--fits NAME ...]]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

RUNS = {
    "aim": ["--mechanism", "aim", "--epsilon", "1"],
    "jam-pgm": ["--mechanism", "jam-pgm", "--epsilon", "1", "--rounds", "30"],
}


def loadavg() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def chain_model(columns: int, size: int, seed: int):
    """A chain of 3-way cliques over ``columns`` columns of ``size`` codes, noisy counts."""
    from synth_core.model import FitMeasurement

    rng = np.random.default_rng(seed)
    sizes = {f"c{i}": size for i in range(columns)}
    names = list(sizes)
    cliques = [tuple(names[i:i + 3]) for i in range(columns - 2)]
    meas = [FitMeasurement(cl, rng.uniform(0, 100, size ** 3) + rng.normal(0, 5, size ** 3), 5.0)
            for cl in cliques]
    return sizes, meas


def fit_seconds(sizes, meas, path: str) -> tuple[float, float, float, int]:
    """CPU seconds of a first fit of the structure on ``path`` and of a second one (the
    compiled program then reused), the junction tree's MB, and the steps of the first."""
    from synth_core.model import PGMEstimator

    est = PGMEstimator(sizes, max_iters=1000, tol=1e-4, path=path)
    total = est.estimate_total(meas)
    start = time.process_time()
    model = est.fit(meas, total)
    first = time.process_time() - start
    again = [type(m)(m.clique, m.values * 1.01, m.stddev) for m in meas]
    start = time.process_time()
    est.fit(again, total)
    return first, time.process_time() - start, model.size_mb, model.iterations


def fit_rows():
    """One JSON line per (size, path)."""
    import jax  # noqa: F401  (imported before timing: a compiled fit is charged its compile only)

    seed = 0
    for columns, size in [(4, 2), (5, 4), (6, 8), (6, 12), (6, 16), (6, 24), (6, 32), (5, 48), (5, 64), (5, 80)]:
        for path in ("numpy", "jax"):
            seed += 1   # a new structure each time: values differ, the compiled path recompiles
            sizes, meas = chain_model(columns, size, seed)
            sizes = {f"{k}_{seed}": v for k, v in sizes.items()}   # new names: a new program
            meas = [type(m)(tuple(f"{c}_{seed}" for c in m.clique), m.values, m.stddev) for m in meas]
            cpu, rerun, mb, steps = fit_seconds(sizes, meas, path)
            print(json.dumps({"kind": "fit", "path": path, "columns": columns, "size": size,
                              "tree_mb": round(mb, 4), "steps": steps, "cpu_s": round(cpu, 3),
                              "cpu_s_same_structure_again": round(rerun, 3),
                              "loadavg": loadavg()}), flush=True)


def one_run(args: list[str], path: str) -> tuple[float, float, float]:
    """CPU seconds (user+sys of the child), wall seconds and workload error of one fresh run."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("SYNTH_FIT_PATH", None)
    if path != "auto":
        env["SYNTH_FIT_PATH"] = path
    with tempfile.TemporaryDirectory() as tmp:
        diag = Path(tmp) / "diag.json"
        cmd = [sys.executable, "-m", "synth_core.cli", "run", "--sample", "titanic", "--seed", "1",
               "--out", str(Path(tmp) / "out.csv"), "--diagnostics", str(diag), "--quiet", *args]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, check=True, env=env, cwd=ROOT, capture_output=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        error = json.loads(diag.read_text())["workload_error"]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, error


def run_rows(repeats: int):
    for name, args in RUNS.items():
        for path in ("jax", "auto"):
            results = [one_run(args, path) for _ in range(repeats)]
            print(json.dumps({
                "kind": "run", "run": f"titanic {name} eps 1", "path": path,
                "cpu_s_median": round(statistics.median(r[0] for r in results), 2),
                "cpu_s": [round(r[0], 2) for r in results],
                "wall_s_median": round(statistics.median(r[1] for r in results), 2),
                "workload_error": [round(r[2], 5) for r in results],
                "loadavg": loadavg()}), flush=True)


def oracle_ms(record: dict, kind, calls: int = 10) -> float:
    """CPU ms per call of a numpy oracle at the captured fit's starting point."""
    from synth_core.model import (L2Loss, expand_potentials, junction_tree_of, merge_repeated,
                                  single_blas_thread)

    sizes = record["sizes"]
    cliques = L2Loss(sizes, merge_repeated(record["measurements"])).cliques
    oracle = kind(sizes, cliques, junction_tree_of(sizes, tuple(cliques)))
    start = expand_potentials(sizes, record["warm"] or {}, cliques)
    with single_blas_thread():   # as the numpy fit runs it
        oracle(start, record["total"])
        before = time.process_time()
        for _ in range(calls):
            oracle(start, record["total"])
    return (time.process_time() - before) * 1000 / calls


def cost_model(record: dict) -> dict:
    """What the fit-path cost model (``model.fit_costs``) estimates for the captured fit, cold."""
    from synth_core.inference import FactoredOracle
    from synth_core.model import (L2Loss, PGMEstimator, fit_costs, junction_tree_of, merge_repeated,
                                  model_size_mb)

    sizes = record["sizes"]
    cliques = tuple(L2Loss(sizes, merge_repeated(record["measurements"])).cliques)
    oracle = FactoredOracle(sizes, cliques, junction_tree_of(sizes, cliques))
    call = oracle.estimated_call_seconds()
    size = model_size_mb(sizes, cliques)
    costs = fit_costs(size, record["max_iters"], call, False, PGMEstimator(sizes).compiled_oracle(size))
    return {"estimated_factored_ms": round(call * 1000, 1),
            "estimated_numpy_s": round(costs["numpy"], 1), "estimated_jax_s": round(costs["jax"], 1),
            "cold_choice": min(costs, key=costs.get)}


def captured_fit(record: dict, path: str) -> tuple[float, float, object, str]:
    """CPU seconds of the captured fit on ``path``, of a second one (compiled program reused),
    the model and the oracle that fitted it."""
    import types

    from synth_core.model import PGMEstimator

    est = PGMEstimator(record["sizes"], max_iters=record["max_iters"], tol=record["tol"], path=path)
    warm = types.SimpleNamespace(potentials=record["warm"]) if record["warm"] else None
    start = time.process_time()
    model = est.fit(record["measurements"], record["total"], warm=warm)
    first = time.process_time() - start
    start = time.process_time()
    if path == "jax":
        est.fit(record["measurements"], record["total"] * 1.0001, warm=warm)
    return first, time.process_time() - start, model, est.last_oracle


def captured_fits(folder: Path, names: list[str] | None):
    """(path, record) of each fit pickled in ``folder`` (only ``names`` if given)."""
    import pickle

    for name in sorted(folder.glob("fit_*.pkl")):
        if not names or name.name in names:
            yield name, pickle.loads(name.read_bytes())


def captured_rows(folder: Path, max_numpy_steps: int, with_jax: bool, names: list[str] | None):
    """One JSON line per captured fit (see the module docstring)."""
    from synth_core.inference import FactoredOracle, TreeOracle

    for name, record in captured_fits(folder, names):
        row = {"kind": "captured", "fit": name.name, "tree_mb": None, "steps": record["max_iters"],
               "captured_path": record["path"], "captured_cpu_s": round(record["cpu"], 2),
               "captured_compiled": record["compiled"],
               "tree_oracle_ms": round(oracle_ms(record, TreeOracle), 1),
               "factored_oracle_ms": round(oracle_ms(record, FactoredOracle), 1),
               **cost_model(record)}
        if record["max_iters"] <= max_numpy_steps:
            cpu, _, model, _ = captured_fit(record, "numpy")
            row.update(numpy_cpu_s=round(cpu, 2), tree_mb=round(model.size_mb, 1),
                       max_marginal_diff=max(float(np.abs(model.fitted_marginals[c] -
                                                          record["fitted_marginals"][c]).max())
                                             for c in model.cliques))
        if with_jax:
            first, again, model, oracle = captured_fit(record, "jax")
            row.update(jax_cpu_s=round(first, 2), jax_again_cpu_s=round(again, 2),
                       jax_oracle=oracle, jax_iterations=model.iterations,
                       tree_mb=round(model.size_mb, 1))
        row["loadavg"] = loadavg()
        print(json.dumps(row), flush=True)


def convergence_rows(folder: Path, steps: list[int], names: list[str] | None):
    """One JSON line per (captured fit, step count) (see the module docstring)."""
    import types

    from synth_core.model import STEPS_PER_BLOCK, L2Loss, PGMEstimator, merge_repeated

    counts = sorted(set(steps) | {s - STEPS_PER_BLOCK for s in steps if s > STEPS_PER_BLOCK})
    for name, record in captured_fits(folder, names):
        loss_fn = L2Loss(record["sizes"], merge_repeated(record["measurements"]))
        warm = types.SimpleNamespace(potentials=record["warm"]) if record["warm"] else None
        fits = {}
        for count in counts:
            est = PGMEstimator(record["sizes"], max_iters=count, tol=0.0, path="jax")
            start = time.process_time()
            model = est.fit(record["measurements"], record["total"], warm=warm)
            fits[count] = (model, loss_fn(model.fitted_marginals), time.process_time() - start)
        last_model, last_loss, _ = fits[max(counts)]
        for count in sorted(steps):
            model, loss, cpu = fits[count]
            before = fits.get(count - STEPS_PER_BLOCK)
            print(json.dumps({
                "kind": "convergence", "fit": name.name, "tree_mb": round(model.size_mb, 1),
                "captured_max_iters": record["max_iters"], "captured_tol": record["tol"],
                "steps": count, "loss": round(loss, 4),
                "loss_excess_over_last": round(loss / last_loss - 1, 6),
                "last_block_improvement": (None if before is None else
                                           round((before[1] - loss) / max(abs(loss), 1.0), 7)),
                "max_l1_share_vs_last": round(max(
                    float(np.abs(model.fitted_marginals[c] - last_model.fitted_marginals[c]).sum())
                    for c in model.cliques) / record["total"], 6),
                "cpu_s": round(cpu, 2), "last_steps": max(counts), "loadavg": loadavg()}),
                flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-fits", action="store_true")
    parser.add_argument("--skip-runs", action="store_true")
    parser.add_argument("--captured", type=Path, help="replay the fits pickled in this folder")
    parser.add_argument("--max-numpy-steps", type=int, default=100,
                        help="replay on numpy only the captured fits of at most this many steps")
    parser.add_argument("--jax", action="store_true", help="with --captured: also fit compiled")
    parser.add_argument("--convergence", type=int, nargs="+", metavar="N",
                        help="with --captured: fit each captured structure for N steps, tol 0")
    parser.add_argument("--fits", nargs="+", metavar="NAME",
                        help="with --captured: only these files (fit_000.pkl ...)")
    opts = parser.parse_args()
    if opts.captured and opts.convergence:
        convergence_rows(opts.captured, opts.convergence, opts.fits)
        return
    if opts.captured:
        captured_rows(opts.captured, opts.max_numpy_steps, opts.jax, opts.fits)
        return
    if not opts.skip_runs:
        run_rows(opts.repeats)
    if not opts.skip_fits:
        fit_rows()


if __name__ == "__main__":
    main()
