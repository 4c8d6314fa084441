"""Speed of the public-column mechanisms on Adult (the setup of ``vertical.py``).

Each run executes in a fresh subprocess (``vertical.py``'s :func:`run_one`:
Adult, all-3way, delta 1e-9, bounded DP, max model size 80 MB) and prints one
JSON line with

* ``cpu_seconds`` (user + sys of the run, all threads), ``wall``, the
  ``loadavg`` at the end and ``peak_rss_mb``;
* ``error_private``: the workload error on ``W'`` (CURATOR-ONLY diagnostic);
* ``phases``: CPU seconds per phase, measured by timers wrapped around the
  library's functions in the subprocess: ``fit`` (every Private-PGM fit but
  the final one), ``final_fit``, ``fit_compiling`` (the fits, of either
  kind, that compiled a new JAX program: it overlaps both), ``scoring`` (the mechanism's candidate scores,
  model marginals and exact counts included), ``counting`` (exact marginals
  of the private table, wherever asked for), ``conditioning`` (choosing the
  conditioning marginals and answering them) and ``sampling`` (the synthetic
  table: conditional or plain generation). The benchmark's own scoring after
  the run (``scoring_seconds`` of ``vertical.py``) is not a phase of the run.

    python benchmarks/vertical_speed.py                       # the three, seed 0, 75% public, epsilon 1
    python benchmarks/vertical_speed.py --seeds 0 1 2 --out benchmarks/results/vertical_adult/speed.jsonl

``--fit-costs TRACE`` times single fits instead (each in a fresh process):
the structure a traced conditional run had after ``--upto`` rounds (its
conditioning marginals under ``--condition-max-mb``, exact; the private 1-ways
and the traced cliques with Gaussian noise of std 30), fitted cold (compile
included) and again warm-started (the compiled program reused) with
``--iters`` iterations, once per ``--oracles`` (``numpy``: the numpy path)::

    python benchmarks/vertical_speed.py --fit-costs benchmarks/results/vertical_adult/traces/0.75_conditional-aim_1_0_ae17d4.jsonl --upto 14 --condition-max-mb 10 5
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
import time
from pathlib import Path

from common import ROOT, emit, require_shared

#: the mechanisms the speed targets are set for (``vertical.py`` labels)
SPEED_MECHANISMS = ("conditional-aim", "conditional-vjam-pgm", "vjam-pgm")
PHASES = ("fit", "fit_compiling", "final_fit", "scoring", "counting", "conditioning", "sampling")


class PhaseTimers:
    """CPU seconds (``time.process_time``: all threads) spent inside wrapped
    functions, per phase. A phase entered again while running (recursion, or a
    function of the same phase calling another) is counted once."""

    def __init__(self):
        self.seconds = {p: 0.0 for p in PHASES}
        self._depth = {p: 0 for p in PHASES}

    def wrap(self, owner, attr: str, phase, method: bool = True) -> None:
        """Replace ``owner.attr`` by a timed version; ``phase`` is a name, or a
        function of the call's arguments returning one."""
        inner = getattr(owner, attr)

        @functools.wraps(inner)
        def timed(*args, **kwargs):
            name = phase(*args, **kwargs) if callable(phase) else phase
            if self._depth[name]:
                return inner(*args, **kwargs)
            self._depth[name] += 1
            start = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                self._depth[name] -= 1
                self.seconds[name] += time.process_time() - start

        setattr(owner, attr, timed)

    def install(self) -> None:
        from synth_core import conditional, engine, marginals, model
        from synth_core.mechanisms import aim, base, vjam_pgm

        self.wrap(engine.Engine, "_refit",
                  lambda self_, max_iters=None, tol=None: "fit" if max_iters is None else "final_fit")
        self._wrap_compiled(model.PGMEstimator)
        for mech in (aim.AIM, vjam_pgm.VJAMPGM):
            self.wrap(mech, "scores", "scoring")
        self.wrap(marginals.CodedTable, "marginal", "counting")
        self.wrap(conditional.ConditionalSetup, "prepare", "conditioning")
        self.wrap(conditional.ConditionalSetup, "public_answer", "conditioning")
        self.wrap(base, "generate_conditionally", "sampling")
        self.wrap(model.FittedModel, "sample", "sampling")

    def _wrap_compiled(self, estimator_cls) -> None:
        """``fit_compiling``: CPU seconds of the fits during which a JAX program was compiled."""
        inner = estimator_cls.fit
        timers = self

        @functools.wraps(inner)
        def fit(self_, *args, **kwargs):
            before, start = self_.compiles, time.process_time()
            out = inner(self_, *args, **kwargs)
            if self_.compiles > before:
                timers.seconds["fit_compiling"] += time.process_time() - start
            return out

        estimator_cls.fit = fit


def run_timed(fraction: float, label: str, epsilon: float, seed: int,
              rounds: int | None = None) -> dict:
    """One run in this process with phase timers; the row ``vertical.py`` stores plus
    ``phases``, ``wall`` and ``loadavg``."""
    import vertical

    timers = PhaseTimers()
    timers.install()
    start = time.perf_counter()
    row = vertical.run_one(fraction, label, epsilon, seed, rounds_option=rounds)[0]
    wall = time.perf_counter() - start - row["scoring_seconds"]
    return dict(bench="vertical-speed", public_fraction=fraction, mechanism=label,
                epsilon=epsilon, seed=seed, rounds_option=rounds,
                cpu_seconds=row["cpu_seconds"], wall=wall,
                loadavg=Path("/proc/loadavg").read_text().split()[:3],
                peak_rss_mb=row["peak_rss_mb"], error_private=row["error_private"],
                error_all=row["error_all"], rounds=row["rounds"],
                conditioning_marginals=row["conditioning_marginals"],
                fit_oracle=row["fit_oracle"],
                phases={k: round(v, 2) for k, v in timers.seconds.items()},
                commit=_commit())


def fit_cost(trace: Path, upto: int, oracle: str, condition_max_mb: float, iters: int,
             fraction: float = 0.75) -> dict:
    """CPU seconds of a cold and a warm fit of a traced run's structure (see the module doc)."""
    import numpy as np

    import vertical
    from common import DATA
    from synth_core.backends.inputs import prepare_inputs
    from synth_core.conditional import conditional_workload, conditioning_marginals
    from synth_core.model import FitMeasurement, PGMEstimator, model_size_mb
    from synth_core.schema import load_schema
    from synth_core.workload import all_k_way

    private = prepare_inputs(str(DATA / "adult" / "adult.csv"),
                             schema=load_schema(DATA / "adult" / "domain.json")).private
    sizes, public = private.size_of, vertical.public_columns(fraction)
    kept, _ = conditioning_marginals(conditional_workload(all_k_way(list(sizes), 3), public),
                                     public, sizes, condition_max_mb)
    rng, std = np.random.default_rng(0), 30.0

    def noisy(cl):
        x = private.marginal(cl)
        return FitMeasurement(cl, x + rng.normal(0, std, x.size), std)

    meas = [FitMeasurement(cl, private.marginal(cl), std) for cl in kept]
    meas += [noisy((c,)) for c in sizes if c not in public]
    events = [json.loads(l) for l in trace.read_text().splitlines()]
    meas += [noisy(tuple(e["cliques"][0])) for e in events if 0 < e["round"] <= upto]
    path, oracle = ("numpy", "auto") if oracle == "numpy" else ("jax", oracle)
    est = PGMEstimator(sizes, max_iters=iters, tol=1e-4, oracle=oracle, path=path)
    start = time.process_time()
    model = est.fit(meas, float(private.n))
    cold = time.process_time() - start
    est.fit(meas, float(private.n), warm=model)
    warm = time.process_time() - start - cold
    return dict(bench="vertical-fit-cost", trace=trace.name, upto=upto,
                oracle=est.last_oracle if path == "jax" else "numpy",
                condition_max_mb=condition_max_mb, conditioning_marginals=len(kept),
                model_mb=round(model_size_mb(sizes, [m.clique for m in meas]), 2), iters=iters,
                cold_cpu_seconds=round(cold, 2), warm_cpu_seconds=round(warm, 2),
                loadavg=Path("/proc/loadavg").read_text().split()[:3], commit=_commit())


def _commit() -> str:
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)
    return out.stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mechanisms", nargs="+", default=list(SPEED_MECHANISMS))
    ap.add_argument("--fraction", type=float, default=0.75)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--rounds", type=int, default=None,
                    help="the mechanism's rounds option (default: its own)")
    ap.add_argument("--out", type=Path, default=None, help="also append the rows to this file")
    ap.add_argument("--fit-costs", type=Path, default=None, metavar="TRACE",
                    help="time single fits of this traced run's structure instead (see above)")
    ap.add_argument("--upto", type=int, default=14, help="with --fit-costs: rounds of the trace")
    ap.add_argument("--oracles", nargs="+", default=["hugin", "implicit"])
    ap.add_argument("--condition-max-mb", nargs="+", type=float, default=[5.0])
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--one", nargs=4, help=argparse.SUPPRESS)  # FRACTION MECHANISM EPSILON SEED
    ap.add_argument("--one-fit", nargs=2, help=argparse.SUPPRESS)  # ORACLE CONDITION_MAX_MB
    args = ap.parse_args()
    require_shared()
    if args.one:
        frac, label, eps, seed = args.one
        return emit(**run_timed(float(frac), label, float(eps), int(seed), args.rounds))
    if args.one_fit:
        return emit(**fit_cost(args.fit_costs, args.upto, args.one_fit[0],
                               float(args.one_fit[1]), args.iters))
    if args.fit_costs:
        for mb in args.condition_max_mb:
            for oracle in args.oracles:
                _child(["--fit-costs", str(args.fit_costs), "--upto", str(args.upto),
                        "--iters", str(args.iters), "--one-fit", oracle, str(mb)], args.out)
        return
    for seed in args.seeds:
        for label in args.mechanisms:
            extra = ["--rounds", str(args.rounds)] if args.rounds is not None else []
            _child(["--one", str(args.fraction), label, str(args.epsilon), str(seed), *extra],
                   args.out)


def _child(argv: list[str], out: Path | None) -> None:
    """Run this script with ``argv`` in a fresh process; print (and append to ``out``)
    its JSON line."""
    done = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True)
    lines = [l for l in done.stdout.splitlines() if l.startswith("{")]
    if done.returncode != 0 or not lines:
        return emit(bench="vertical-speed", argv=argv, failed=True, stderr=done.stderr[-2000:])
    print(lines[-1], flush=True)
    if out is not None:
        with out.open("a") as fh:
            fh.write(lines[-1] + "\n")


if __name__ == "__main__":
    main()
