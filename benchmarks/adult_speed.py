"""Speed of the Adult runs: JAM-PGM and AIM on adult_pub025, one fresh process per run (JSON lines).

Every run: all-3way workload, delta 1e-9, bounded DP, max model size 80 MB.
JAM-PGM uses the public rows; AIM the private rows only (as
``benchmarks/accuracy.py`` runs it) with ``--fit-iters`` (default 1000,
AIM's own). Each run executes in a child process (``--child``) so its CPU
seconds (user+sys of that process, all threads) include every import and
compile; the parent prints the child's JSON line with the load average.

Per-phase CPU seconds (``phases``) come from timers wrapped around the
library's entry points inside the child:

* ``fit_numpy`` / ``fit_jax``: round fits on each path (``jax`` includes compiles),
* ``final_fit``: the fit after the last round,
* ``scoring``: the model's answers to a round's candidate queries
  (``FittedModel.counts_many``),
* ``counting``: exact marginals of the data (``CodedTable.marginal``; nested
  inside scoring's caller, not inside ``scoring``),
* ``sampling``: drawing the synthetic records.

Usage::

    PYTHONPATH=. python benchmarks/adult_speed.py                 # both mechanisms, eps 1 and 10, seeds 0-2
    PYTHONPATH=. python benchmarks/adult_speed.py --quick         # JAM-PGM eps 1 seed 0 only
    PYTHONPATH=. python benchmarks/adult_speed.py --mechanisms aim --epsilons 10 --seeds 0
    ADULT_SPEED_CAPTURE=/tmp/fits PYTHONPATH=. python benchmarks/adult_speed.py \
        --mechanisms jam-pgm --epsilons 10 --seeds 0   # also keep the large fits' inputs
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from common import cpu_seconds, dataset, peak_rss_mb, require_shared  # noqa: E402

DATA = "adult_pub025"


def loadavg() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


class PhaseTimer:
    """CPU seconds (this process, all threads) spent inside wrapped functions, by phase.

    A phase entered while already inside the same phase is not counted twice.
    """

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self._depth: dict[str, int] = {}

    def wrap(self, owner, name: str, phase) -> None:
        """Replace ``owner.name`` by a timed wrapper; ``phase`` is a name or a function of the call."""
        original = getattr(owner, name)
        timer = self

        @functools.wraps(original)
        def timed(*args, **kwargs):
            label = phase(*args, **kwargs) if callable(phase) else phase
            if timer._depth.get(label, 0):
                return original(*args, **kwargs)
            timer._depth[label] = 1
            start = cpu_seconds()
            try:
                return original(*args, **kwargs)
            finally:
                timer._depth[label] = 0
                timer.seconds[label] = timer.seconds.get(label, 0.0) + cpu_seconds() - start

        setattr(owner, name, timed)


def instrument(timer: PhaseTimer, final: dict) -> None:
    """Wrap the library's fit, scoring, counting and sampling entry points."""
    from synth_core import engine, marginals, model
    from synth_core.mechanisms import base

    fit = model.PGMEstimator.fit

    def fit_by_path(est, *args, **kwargs):
        start = cpu_seconds()
        out = fit(est, *args, **kwargs)
        label = "final_fit" if final.get("now") else f"fit_{out.path or 'none'}"
        timer.seconds[label] = timer.seconds.get(label, 0.0) + cpu_seconds() - start
        return out

    refit = engine.Engine._refit

    def marked_refit(self, max_iters=None, tol=None):
        final["now"] = max_iters is not None   # only the final refit passes its own iterations
        try:
            return refit(self, max_iters, tol)
        finally:
            final["now"] = False

    model.PGMEstimator.fit = fit_by_path
    capture = os.environ.get(CAPTURE_ENV)
    if capture:
        capture_fits(Path(capture), final)
    engine.Engine._refit = marked_refit
    timer.wrap(model.FittedModel, "counts_many", "scoring")
    timer.wrap(marginals.CodedTable, "marginal", "counting")
    timer.wrap(base.AdaptiveMechanism, "sample", "sampling")


#: Set to a directory: the child pickles the inputs of every fit of a junction tree
#: of at least 8 MB there (``benchmarks/fit_paths.py --captured DIR`` replays them).
CAPTURE_ENV = "ADULT_SPEED_CAPTURE"


def capture_fits(folder: Path, final: dict) -> None:
    """Wrap ``PGMEstimator.fit`` (already timed) to pickle large fits' inputs and their result."""
    import pickle

    from synth_core import model

    fit = model.PGMEstimator.fit
    folder.mkdir(parents=True, exist_ok=True)

    def fit_and_keep(est, measurements, total, warm=None, max_iters=None, tol=None):
        compiles, start = est.compiles, cpu_seconds()
        out = fit(est, measurements, total, warm=warm, max_iters=max_iters, tol=tol)
        if out.size_mb >= 8.0:
            record = dict(sizes=est.sizes, measurements=list(measurements), total=total,
                          warm=None if warm is None else warm.potentials,
                          max_iters=max_iters or est.max_iters, tol=tol or est.tol,
                          fitted_marginals=out.fitted_marginals, path=out.path,
                          steps=out.iterations, cpu=cpu_seconds() - start,
                          compiled=est.compiles - compiles, final=bool(final.get("now")))
            name = folder / f"fit_{len(list(folder.glob('fit_*.pkl'))):03d}.pkl"
            name.write_bytes(pickle.dumps(record))
        return out

    model.PGMEstimator.fit = fit_and_keep


def child(mechanism: str, epsilon: float, seed: int, fit_iters: int | None,
          verbose: bool = False) -> dict:
    """One run in this process; returns its JSON record (``verbose``: with
    ``[round, model MB, fit path, wall seconds]`` of every round)."""
    from synth_core import Synthesizer
    from synth_core.schema import load_schema

    timer, final = PhaseTimer(), {}
    instrument(timer, final)

    priv, pub, domain = dataset(DATA)
    synth = Synthesizer(mechanism, epsilon=epsilon, delta=1e-9, workload="all-3way",
                        neighbours="bounded", seed=seed, max_model_size=80.0, fit_iters=fit_iters)
    cpu0, wall0 = cpu_seconds(), time.perf_counter()
    rounds, per_round = 0, []
    for event in synth.run(str(priv), str(pub) if mechanism != "aim" else None,
                           schema=load_schema(domain)):
        rounds += event.round > 0
        per_round.append([event.round, round(event.model_size_mb, 2), event.fit_path,
                          round(event.seconds, 2)])
    res = synth.result
    error = res.curator_diagnostics().workload_error
    return dict(bench="adult_speed", mechanism=mechanism, data=DATA, epsilon=epsilon, seed=seed,
                fit_iters=synth.config.round_fit_iters,
                cpu_seconds=round(cpu_seconds(), 2), run_cpu_seconds=round(cpu_seconds() - cpu0, 2),
                wall=round(time.perf_counter() - wall0, 2), peak_rss_mb=round(peak_rss_mb(), 1),
                workload_error=round(float(error), 5), rounds=rounds,
                compiles=synth.engine.estimator.compiles,
                final_model_mb=round(res.model.size_mb, 3),
                phases={k: round(v, 2) for k, v in sorted(timer.seconds.items())},
                per_round=per_round if verbose else None)


def run_fresh(mechanism: str, epsilon: float, seed: int, fit_iters: int | None,
              verbose: bool = False) -> dict:
    """One run in a fresh child process; the child's record plus the load average."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mechanism, str(epsilon),
           str(seed), str(fit_iters or 0)] + (["--rounds-detail"] if verbose else [])
    load_before = loadavg()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()   # the code the child imports
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
    record = json.loads(out.stdout.strip().splitlines()[-1])
    record["loadavg"] = f"{load_before} -> {loadavg()}"
    record["commit"] = commit
    return record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mechanisms", nargs="+", default=["jam-pgm", "aim"])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 10.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--fit-iters", type=int, default=1000, help="AIM's per-round fit iterations")
    ap.add_argument("--quick", action="store_true", help="JAM-PGM, epsilon 1, seed 0 only")
    ap.add_argument("--rounds-detail", action="store_true",
                    help="add each round's model MB, fit path and wall seconds")
    ap.add_argument("--child", nargs=4, metavar=("MECH", "EPS", "SEED", "ITERS"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        mech, eps, seed, iters = args.child
        print(json.dumps(child(mech, float(eps), int(seed), int(iters) or None,
                               args.rounds_detail)), flush=True)
        return
    require_shared()
    if args.quick:
        args.mechanisms, args.epsilons, args.seeds = ["jam-pgm"], [1.0], [0]
    for mech in args.mechanisms:
        for eps in args.epsilons:
            for seed in args.seeds:
                iters = args.fit_iters if mech == "aim" else None
                print(json.dumps(run_fresh(mech, eps, seed, iters, args.rounds_detail)),
                      flush=True)


if __name__ == "__main__":
    main()
