"""The session's what-if preview: predicted error against epsilon at zero privacy cost.

Starting a what-if estimates every epsilon at once without a run (a
:class:`~synth_core.whatif.NoiseEstimator` per mechanism, from the privacy
arithmetic and the stand-in). Stand-in runs then measure the points in the
background (a :class:`~synth_core.runner.SweepWorker`, one job per mechanism,
epsilon and seed, in :func:`~synth_core.whatif.refine_order`) on stand-in
tables built from public information only (a
:class:`~synth_core.whatif.PublicBasis`, see :mod:`synth_core.whatif`); each
finished point replaces its estimate and recalibrates the others. None of it
reaches the session's privacy total.
The mechanisms are entries of the mechanism list
(:mod:`~synth_core.workbench.guide`: ``aim``, ``aim+conditional``, ...): an
entry the public information marked makes unavailable is refused with its
reason, and a conditional entry's stand-in runs use ``conditional=True``.
A curve's ``mechanism`` is its entry's key.
Finished curves are cached per (data, public information, settings,
mechanism, epsilon grid, seeds, stand-in). A run started after a what-if gets
a ``what_if`` block in its release report (basis and predicted curves; no
curator-only value).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Sequence

from ..errors import ConfigError, SynthError
from ..privacy import rho_from_epsilon_delta
from ..report import check_release
from ..runner import FAILED, FINISHED, SweepWorker
from ..whatif import (NOTHING_SPENT, STANDINS, NoiseEstimator, PublicBasis, WhatIfCurve,
                      build_curve, check_predicted, noise_estimator, predict_point, refine_order,
                      run_config)
from .background import BackgroundService
from .catalog import RunSettings
from .compare import mechanism_settings
from .guide import choice_list, key_title, parse_choices
from .runs import PlannedRuns, estimate_seconds, planned_seconds

#: rows assumed by default when nothing public says how many there are (unbounded DP)
DEFAULT_ASSUMED_N = 1000
#: the row counts a what-if may assume (its stand-in tables are this long, so the top
#: bounds memory and time: 10 million rows took 103 s and 2.8 GB for one AIM run)
ASSUMED_N_RANGE = (10, 10_000_000)


def what_if_settings(s: RunSettings) -> dict:
    """The run settings a prediction uses (all but mechanism, epsilon, seed, mode)."""
    return dict(workload=s.workload, delta=s.delta, neighbours=s.neighbours, rounds=s.rounds,
                fit_iters=s.fit_iters, final_fit_iters=s.final_fit_iters,
                fit_tol=s.fit_tol, max_model_size=s.max_model_size, options=dict(s.options))


def what_if_key(context: dict, mechanism: str, epsilons: Sequence[float], seeds: int,
                standin: str, assumed_n: int | None) -> str:
    """Identifies a curve: ``context`` (data, public information, settings),
    mechanism, epsilon grid, seeds, stand-in and assumed row count."""
    ident = {**context, "mechanism": mechanism, "epsilons": sorted(float(e) for e in epsilons),
             "seeds": int(seeds), "standin": standin, "assumed_n": assumed_n}
    return hashlib.sha1(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:16]


def check_choice(mechanisms: Sequence[str], epsilons: Sequence[float], seeds: int,
                 delta: float) -> tuple[list[str], list[float]]:
    """The mechanisms (keys of the mechanism list) and the sorted epsilon grid
    of a what-if (ConfigError on a bad choice)."""
    mechanisms = list(mechanisms)
    if not mechanisms:
        raise ConfigError("Choose at least one mechanism for the what-if.")
    for choice in parse_choices(mechanisms):
        check_predicted(choice.mechanism)
    epsilons = sorted({float(e) for e in epsilons})
    if not epsilons:
        raise ConfigError("Choose at least one epsilon for the what-if.")
    for e in epsilons:
        rho_from_epsilon_delta(e, delta)
    if not 1 <= int(seeds) <= 10:
        raise ConfigError(f"Use 1 to 10 seeds, not {seeds}.")
    return mechanisms, epsilons


def choose_standin(standin: str | None, available: Sequence[str]) -> str:
    """``standin`` (the best available one if None), checked against ``available``."""
    standin = standin or available[0]
    if standin not in STANDINS:
        raise ConfigError(f"Unknown stand-in {standin!r}.",
                          hint="Available here: " + ", ".join(available) + ".")
    if standin not in available:
        raise ConfigError(f"The '{standin}' stand-in is not available here.",
                          hint="Available: " + ", ".join(available) + ".")
    return standin


@dataclass(frozen=True)
class WhatIfRequest:
    """The latest what-if the curator asked for, and the keys of its curves."""

    mechanisms: tuple[str, ...]
    epsilons: tuple[float, ...]
    seeds: int
    standin: str
    keys: dict
    #: the public information the curves are based on (the session's summary line)
    public: str = ""


class WhatIfService(BackgroundService):
    """Predicted curves of a session: the preview in progress, the cache, and the
    log of curves made per table (for the release report)."""

    def __init__(self):
        super().__init__()
        self.request: WhatIfRequest | None = None
        self._cache: dict[str, WhatIfCurve] = {}
        self._failed: dict[str, WhatIfCurve] = {}    # shown, not cached: may be retried
        self._live: dict[str, WhatIfCurve] = {}      # in progress: estimates and measured points
        #: (time, table, the public information it was based on, curve)
        self._log: list[tuple[float, int, str, WhatIfCurve]] = []
        self._lock = threading.Lock()

    def check_idle(self) -> None:
        """ConfigError while a preview is running."""
        if self.running:
            raise ConfigError("A what-if preview is already running.",
                              hint="Wait for it or stop it.")

    def stale(self, public: str) -> str | None:
        """What the latest request's curves were based on, when that differs
        from the public information ``public`` marked now; None when current."""
        if self.request is None or self.request.public == public:
            return None
        return self.request.public

    def curves(self) -> list[WhatIfCurve]:
        """The curves of the latest request that are ready (cached or failed)."""
        if not self.request:
            return []
        with self._lock:
            out = [self._cache.get(k) or self._failed.get(k) or self._live.get(k)
                   for k in self.request.keys.values()]
        return [c for c in out if c is not None]

    def start(self, basis: PublicBasis, settings: RunSettings, request: WhatIfRequest,
              table: int) -> SweepWorker | None:
        """Predict in the background the curves of ``request`` not cached yet;
        None if all are cached. ``table`` numbers the loaded table (curves are
        logged for it). An entry of ``request.mechanisms`` that the basis's
        public information (or the neighbour relation) makes unavailable is
        refused with its reason (ConfigError)."""
        self.check_idle()
        choice_list(public_rows=basis.rows is not None, public_columns=bool(basis.public_columns),
                    neighbours=settings.neighbours).check(request.mechanisms)
        self.request = request
        todo = fastest_first([m for m in request.mechanisms if request.keys[m] not in self._cache],
                             settings, basis.schema, basis.n)
        if not todo:
            return None
        seeds, epsilons, standin = request.seeds, request.epsilons, request.standin
        order = refine_order(epsilons)
        jobs = [{"mechanism": m, "epsilon": e, "seed": sd}
                for m in todo for e in order for sd in range(seeds)]
        rows: dict[str, list] = {m: [] for m in todo}
        started = {m: None for m in todo}
        curve_settings = {m: entry_settings(settings, m) for m in todo}
        estimators = {m: self._estimator(basis, m, curve_settings[m], standin) for m in todo}
        for m in todo:
            self._update_live(request.keys[m], basis, m, standin, rows[m], seeds,
                              curve_settings[m], estimators[m], epsilons)

        def run_one(job, should_stop):
            m = job["mechanism"]
            started[m] = started[m] or time.time()
            cfg = run_config(parse_choices([m])[0].mechanism, job["epsilon"], job["seed"],
                             **curve_settings[m])
            err = predict_point(basis, cfg, standin=standin, should_stop=should_stop)
            return None if err is None else {**job, "status": FINISHED, "error": err}

        def on_row(row):
            m = row["mechanism"]
            if row.get("status") == FAILED:
                row = {**row, "failure": row.pop("error", None), "error": None}
            rows[m].append(row)
            if len(rows[m]) == len(epsilons) * seeds:
                curve = entry_curve(basis, m, standin, rows[m], seeds=seeds,
                                    settings=curve_settings[m], seconds=time.time() - started[m])
                self._keep(request.keys[m], curve, table, request.public)
            else:
                self._update_live(request.keys[m], basis, m, standin, rows[m], seeds,
                                  curve_settings[m], estimators[m], epsilons)

        self.worker = SweepWorker(jobs, run_one, on_row=on_row,
                                  label=f"what-if: {len(jobs)} stand-in runs").start()
        return self.worker

    @staticmethod
    def _estimator(basis: PublicBasis, key: str, settings: dict,
                   standin: str) -> NoiseEstimator | None:
        """The error model of entry ``key``'s mechanism, or None when it cannot
        be made (the stand-in runs then report why)."""
        try:
            return noise_estimator(basis, parse_choices([key])[0].mechanism, settings,
                                   standin=standin)
        except SynthError:
            return None

    def _update_live(self, key: str, basis: PublicBasis, mechanism: str, standin: str,
                     rows: list, seeds: int, settings: dict, estimator: NoiseEstimator | None,
                     epsilons: Sequence[float]) -> None:
        """The curve in progress: measured points so far, estimates (calibrated on
        them) for the rest."""
        measured: dict[float, list] = {}
        for r in rows:
            if r.get("error") is not None:
                measured.setdefault(float(r["epsilon"]), []).append(float(r["error"]))
        estimates = None
        if estimator is not None:
            estimates = estimator.estimates(epsilons, {e: sum(v) / len(v)
                                                       for e, v in measured.items()})
        curve = entry_curve(basis, mechanism, standin, rows, seeds=seeds, settings=settings,
                            estimates=estimates)
        with self._lock:
            self._live[key] = curve

    def _keep(self, key: str, curve: WhatIfCurve, table: int, public: str) -> None:
        """Cache a finished curve (a curve with failures is shown but not cached)
        and log it for the table's release reports."""
        with self._lock:
            self._live.pop(key, None)
            if curve.failures:
                self._failed[key] = curve
            else:
                self._cache[key] = curve
                self._failed.pop(key, None)
            if curve.points:
                self._log.append((time.time(), table, public, curve))

    def report(self, table: int, before: float | None = None, settings=None,
               public: str | None = None) -> dict | None:
        """The report's ``what_if`` block: predictions made on ``table`` before
        ``before`` (a time) from the public information ``public`` (the session's
        summary line; None: any), as the Workload page shows only those that are
        not out of date. Only basis and predicted curves (public information);
        None if none were made. Each curve says whether its settings (workload,
        delta, rounds, ...) are those of ``settings`` (the run's)."""
        with self._lock:
            made = [c for t, tab, pub, c in self._log
                    if tab == table and (before is None or t <= before)
                    and (public is None or pub == public)]
        if not made:
            return None
        latest: dict = {}
        for c in made:   # the latest curve per (mechanism, stand-in)
            latest[(c.mechanism, c.standin)] = c
        curves = []
        for c in latest.values():
            entry = c.to_release()
            entry.update(mechanism=parse_choices([c.mechanism])[0].mechanism,
                         title=key_title(c.mechanism))
            if settings is not None:
                fields = vars(settings)
                entry["same_settings_as_run"] = all(
                    fields[k] == v for k, v in c.settings.items() if k in fields)
            curves.append(entry)
        return {"made": True, "rho_spent": 0.0, "note": NOTHING_SPENT,
                "basis": made[-1].basis, "curves": curves}

    def attach(self, run, table: int, started_at: float | None, public: str) -> None:
        """Add the ``what_if`` block to a finished run's report (what-ifs made
        on ``table`` before the run started, from the public information
        ``public`` the run had)."""
        if run is None or not run.ok:
            return
        block = self.report(table, started_at, run.settings, public)
        if block is not None:
            check_release(block)
            run.result.report["what_if"] = block


def entry_settings(settings: RunSettings, key: str) -> dict:
    """The stand-in run settings of list entry ``key``: the session's (as
    :func:`what_if_settings`), with the entry's options (those its mechanism
    declares, ``conditional=True`` for a conditional entry)."""
    return {**what_if_settings(settings),
            "options": parse_choices([key])[0].run_options(settings.options)}


def entry_curve(basis: PublicBasis, key: str, standin: str, rows, **kwargs) -> WhatIfCurve:
    """:func:`~synth_core.whatif.build_curve` for the mechanism of entry ``key``,
    the curve named by the key (two entries of one mechanism stay apart)."""
    curve = build_curve(basis, parse_choices([key])[0].mechanism, standin, rows, **kwargs)
    curve.mechanism = key
    return curve


def what_if_plan(mechanisms: Sequence[str], epsilons: Sequence[float], seeds: int,
                 settings: RunSettings, estimate) -> list[PlannedRuns]:
    """What a what-if costs, per (mechanism, epsilon): ``seeds`` stand-in runs,
    rho 0 each (a stand-in run never reads the private table; its ledger is
    simulated) and ``estimate(settings)`` seconds each."""
    return [PlannedRuns(m, float(e), int(seeds), 0.0,
                        planned_seconds(estimate, mechanism_settings(settings, m, e)))
            for m in mechanisms for e in sorted({float(x) for x in epsilons})]


def fastest_first(mechanisms: Sequence[str], settings: RunSettings, schema, n: int) -> list[str]:
    """``mechanisms`` by the run-time model's estimate of one stand-in run of
    ``n`` rows (at the settings' epsilon), fastest first: measured points
    replace the estimates soonest. A mechanism without a calibration goes last."""
    def seconds(m: str) -> float:
        try:
            return estimate_seconds(mechanism_settings(settings, m, settings.epsilon),
                                    schema, n, None, [])[0]
        except SynthError:
            return float("inf")
    return sorted(mechanisms, key=seconds)
