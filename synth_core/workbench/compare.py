"""Comparison sweeps (mechanisms x epsilon grid x seeds) of a session.

Run and stored by :mod:`synth_core.experiments` (one result file per run,
written atomically; starting the same comparison again resumes it).

CURATOR-ONLY: the results are true workload errors computed from the private
data; they are saved and downloadable as curator diagnostics, never as part
of a release. Every comparison run spends its privacy budget on the private
data: the session's total counts them (:attr:`CompareService.rho`), and each
job is charged to the table's budget account before it reads the data.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..errors import BudgetExceededError, ConfigError
from ..budget import run_rho
from ..experiments import FINISHED
from ..experiments import STOPPED as STOPPED_RUN
from ..experiments import (DatasetSpec, MechanismSpec, ResultStore, Sweep, job_summary,
                           pending_jobs, run_job)
from ..privacy import rho_from_epsilon_delta
from ..runner import SweepWorker
from ..workload import parse_workload
from .background import BackgroundService
from .budget import BudgetService
from .catalog import RunSettings
from .guide import ChoiceList, choice_list, key_title, parse_choices
from .runs import PlannedRuns, planned_seconds

#: a Compare job the table's total budget did not admit (not run, not stored)
REFUSED = "refused"
#: the run settings every mechanism of a comparison shares
SHARED_SETTINGS = ("delta", "workload", "neighbours", "rounds", "max_model_size", "fit_iters",
                   "final_fit_iters", "fit_tol")


def compare_dir() -> Path:
    """Where comparison results are kept (``$SYNTH_WORKBENCH_OUT/compare``, default ``out/compare``)."""
    return Path(os.environ.get("SYNTH_WORKBENCH_OUT", "out")) / "compare"


def compare_key(data_name: str | None, n_rows: int, schema_json: dict, public_summary: str,
                s: RunSettings) -> str:
    """Identifies the data, public information, workload and fixed settings
    (the first 12 hex digits of a SHA-1 of them)."""
    ident = {"data": data_name, "n": n_rows, "schema": schema_json,
             "public": public_summary, "workload": s.workload, "delta": s.delta,
             "neighbours": s.neighbours, "rounds": s.rounds, "fit_iters": s.fit_iters,
             "final_fit_iters": s.final_fit_iters, "max_model_size": s.max_model_size,
             "options": s.options}
    return hashlib.sha1(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class CompareSetup:
    """What a comparison runs on: the session's data (as a sweep dataset), its
    key, the settings every mechanism shares and the table's fingerprint."""

    dataset: DatasetSpec
    settings: RunSettings
    fingerprint: str

    @property
    def store(self) -> ResultStore:
        """The result store of this setup."""
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.dataset.name or "data").strip("-.")
        return ResultStore(compare_dir() / f"compare-{slug or 'data'}-{self.dataset.key}")

    @property
    def choices(self) -> ChoiceList:
        """The mechanism list's entries this setup's public information and
        neighbour relation allow (:mod:`~synth_core.workbench.guide`)."""
        d = self.dataset
        return choice_list(public_rows=d.public is not None or bool(d.public_flag),
                           public_columns=bool(d.public_columns),
                           neighbours=self.settings.neighbours)

    def sweep(self, mechanisms: Sequence[str], epsilons: Sequence[float], seeds: int) -> Sweep:
        """The comparison as an experiments sweep (ConfigError on bad choices).
        ``mechanisms`` are keys of the mechanism list (``aim``,
        ``aim+conditional``); an entry the public information marked makes
        unavailable is refused with its reason. Each job runs the entry's
        mechanism under the entry's key as its label, with the session's
        options it declares and ``conditional=True`` for a conditional entry;
        the session's public columns go to every mechanism that uses them."""
        mechanisms = list(mechanisms)
        if not mechanisms:
            raise ConfigError("Choose at least one mechanism to compare.")
        choices = self.choices.check(mechanisms)
        if not epsilons:
            raise ConfigError("Choose at least one epsilon.")
        s = self.settings
        for e in epsilons:
            rho_from_epsilon_delta(float(e), s.delta)
        if not 1 <= int(seeds) <= 20:
            raise ConfigError(f"Use 1 to 20 seeds, not {seeds}.")
        parse_workload(s.workload, self.dataset.schema.names)
        mechs = tuple(MechanismSpec(c.key, c.mechanism, c.run_options(s.options),
                                    public_columns=bool(self.dataset.public_columns) or None)
                      for c in choices)
        return Sweep((self.dataset,), mechs, tuple(sorted(float(e) for e in epsilons)),
                     tuple(range(int(seeds))), {f: getattr(s, f) for f in SHARED_SETTINGS},
                     name=f"compare {self.dataset.name}")


class CompareService(BackgroundService):
    """The session's comparison: the sweep in progress and what comparisons spent."""

    def __init__(self, budget: BudgetService):
        super().__init__()
        self.budget = budget
        #: budget the comparison runs of this session spent (rho)
        self.rho = 0.0
        #: comparison runs that ended in this session
        self.runs = 0

    @staticmethod
    def results(setup: CompareSetup) -> tuple[pd.DataFrame, pd.DataFrame]:
        """CURATOR-ONLY: (one row per run, per-marginal errors) saved for ``setup``."""
        store = setup.store
        return store.runs(), store.marginals()

    @staticmethod
    def jobs(setup: CompareSetup, mechanisms: Sequence[str], epsilons: Sequence[float],
             seeds: int) -> tuple[list[dict], int]:
        """The jobs still to run and how many are already saved (resume)."""
        todo, done = pending_jobs(setup.sweep(mechanisms, epsilons, seeds), setup.store)
        return [job_summary(j) for j in todo], done

    def start(self, setup: CompareSetup, mechanisms: Sequence[str], epsilons: Sequence[float],
              seeds: int) -> SweepWorker:
        """Run the missing (mechanism, epsilon, seed) jobs in the background,
        refused up front when together they would pass the table's total."""
        sweep = setup.sweep(mechanisms, epsilons, seeds)
        store = setup.store
        todo = {j.run_id: j for j in pending_jobs(sweep, store)[0]}
        self.budget.check_fits(setup.fingerprint,
                               [(j.config.mechanism, j.config.epsilon) for j in todo.values()],
                               setup.settings.delta,
                               f"this comparison ({len(todo)} run{'' if len(todo) == 1 else 's'})")

        def run_one(job, should_stop):
            j = todo[job["run_id"]]
            # each job is charged to the table's account before it reads the data
            try:
                held = self.budget.reserve(setup.fingerprint, j.config,
                                           f"compare: {key_title(j.mechanism.label)}, "
                                           f"ε={j.config.epsilon:g}",
                                           j.public_columns,
                                           j.dataset.public_flag)
            except BudgetExceededError as exc:   # not run, not stored: shown on the page
                return {**job, "status": REFUSED, "error": exc.text("app")}
            row = None
            try:
                row, marginals = run_job(j, should_stop=should_stop)
            finally:
                self.budget.settle(held, (row or {}).get("rho_spent"),
                                   finished=(row or {}).get("status") == FINISHED)
            if row["status"] == STOPPED_RUN:
                self.rho += row["rho_spent"]
                return None
            store.write(row, marginals)
            return row

        def on_row(row):
            if row["status"] == REFUSED:
                return
            self.runs += 1
            if row.get("rho_spent"):
                self.rho += float(row["rho_spent"])

        self.worker = SweepWorker([job_summary(j) for j in todo.values()], run_one, on_row=on_row,
                                  label=f"{len(todo)} runs on {setup.dataset.name}").start()
        return self.worker


def mechanism_settings(s: RunSettings, key: str, epsilon: float) -> RunSettings:
    """The settings a comparison (or what-if) run of the list entry ``key``
    (``aim``, ``aim+conditional``) at ``epsilon`` uses: the shared ones, and the
    entry's options (:meth:`~synth_core.workbench.guide.MechanismChoice.run_options`)."""
    choice = parse_choices([key])[0]
    return replace(s, mechanism=choice.mechanism, epsilon=float(epsilon),
                   options=choice.run_options(s.options))


def compare_plan(jobs: Sequence[dict], settings: RunSettings, estimate) -> list[PlannedRuns]:
    """What the comparison's pending ``jobs`` cost, per (list entry, epsilon):
    how many runs, the rho each spends on the private data
    (``run_rho(mechanism, epsilon, delta)``: ``rho_from_epsilon_delta``, 0 for
    the public-only baseline) and ``estimate(settings)`` seconds each."""
    counts: dict[tuple[str, float], int] = {}
    for j in jobs:
        key = (j["mechanism"], float(j["epsilon"]))
        counts[key] = counts.get(key, 0) + 1
    plans = []
    for (key, e), n in counts.items():
        run = mechanism_settings(settings, key, e)
        plans.append(PlannedRuns(key, e, n, run_rho(run.mechanism, e, settings.delta),
                                 planned_seconds(estimate, run)))
    return plans
