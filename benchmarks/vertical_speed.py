"""Speed of the public-column mechanisms on Adult (the setup of ``vertical.py``).

Each run executes in a fresh subprocess (``vertical.py``'s :func:`run_one`:
Adult, all-3way, delta 1e-9, bounded DP, max model size 80 MB) and prints one
JSON line with

* ``cpu_seconds`` (user + sys of the run, all threads), ``wall``, the
  ``loadavg`` at the end and ``peak_rss_mb``;
* ``error_private``: the workload error on ``W'`` (CURATOR-ONLY diagnostic);
* ``phases``: CPU seconds per phase, measured by timers wrapped around the
  library's functions in the subprocess: ``fit`` (every Private-PGM fit but
  the final one, of which ``fit_compiling`` were fits that compiled a new JAX
  program), ``final_fit``, ``scoring`` (the mechanism's candidate scores,
  model marginals and exact counts included), ``counting`` (exact marginals
  of the private table, wherever asked for), ``conditioning`` (choosing the
  conditioning marginals and answering them) and ``sampling`` (the synthetic
  table: conditional or plain generation). The benchmark's own scoring after
  the run (``scoring_seconds`` of ``vertical.py``) is not a phase of the run.

    python benchmarks/vertical_speed.py                       # the three, seed 0, 75% public, epsilon 1
    python benchmarks/vertical_speed.py --seeds 0 1 2 --out benchmarks/results/vertical_adult/speed.jsonl
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


def run_timed(fraction: float, label: str, epsilon: float, seed: int) -> dict:
    """One run in this process with phase timers; the row ``vertical.py`` stores plus
    ``phases``, ``wall`` and ``loadavg``."""
    import vertical

    timers = PhaseTimers()
    timers.install()
    start = time.perf_counter()
    row = vertical.run_one(fraction, label, epsilon, seed)[0]
    wall = time.perf_counter() - start - row["scoring_seconds"]
    return dict(bench="vertical-speed", public_fraction=fraction, mechanism=label,
                epsilon=epsilon, seed=seed, cpu_seconds=row["cpu_seconds"], wall=wall,
                loadavg=Path("/proc/loadavg").read_text().split()[:3],
                peak_rss_mb=row["peak_rss_mb"], error_private=row["error_private"],
                error_all=row["error_all"], rounds=row["rounds"],
                conditioning_marginals=row["conditioning_marginals"],
                fit_oracle=row["fit_oracle"],
                phases={k: round(v, 2) for k, v in timers.seconds.items()},
                commit=_commit())


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
    ap.add_argument("--out", type=Path, default=None, help="also append the rows to this file")
    ap.add_argument("--one", nargs=4, help=argparse.SUPPRESS)  # FRACTION MECHANISM EPSILON SEED
    args = ap.parse_args()
    require_shared()
    if args.one:
        frac, label, eps, seed = args.one
        return emit(**run_timed(float(frac), label, float(eps), int(seed)))
    for seed in args.seeds:
        for label in args.mechanisms:
            cmd = [sys.executable, __file__, "--one", str(args.fraction), label,
                   str(args.epsilon), str(seed)]
            out = subprocess.run(cmd, capture_output=True, text=True)
            lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
            if out.returncode != 0 or not lines:
                emit(bench="vertical-speed", mechanism=label, seed=seed, failed=True,
                     stderr=out.stderr[-2000:])
                continue
            print(lines[-1], flush=True)
            if args.out is not None:
                with args.out.open("a") as fh:
                    fh.write(lines[-1] + "\n")


if __name__ == "__main__":
    main()
