"""The Workbench's what-if preview: predicted error against epsilon at zero privacy cost.

A mixin of :class:`~synth_core.workbench.Workbench`. The predictions run in
the background (a :class:`~synth_core.runner.SweepWorker`, one job per
mechanism, epsilon and seed) on stand-in tables built from public information
only (see :mod:`synth_core.whatif`); they never reach the session's privacy
total. Finished curves are cached per (settings, mechanism, epsilon grid,
seeds, stand-in). A run started after a what-if gets a ``what_if`` block in
its release report (basis and predicted curves; no curator-only value).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from typing import Sequence

from .errors import ConfigError
from .mechanisms import MECHANISMS
from .privacy import Neighbours, rho_from_epsilon_delta
from .report import check_release
from .runner import FAILED, FINISHED, SweepWorker
from .whatif import (NOTHING_SPENT, STANDINS, PublicBasis, WhatIfCurve, build_curve,
                     predict_point, run_config)

#: rows assumed by default when nothing public says how many there are (unbounded DP)
DEFAULT_ASSUMED_N = 1000


class WhatIfMixin:
    """What-if predictions of a Workbench (needs its data, schema, public info, settings)."""

    whatif_worker: SweepWorker | None = None
    whatif_request: dict | None = None

    # -- state kept on the instance, created on first use --------------------

    @property
    def _whatif_store(self) -> dict:
        if "_whatif_state" not in self.__dict__:
            self.__dict__["_whatif_state"] = {"cache": {}, "failed": {}, "log": [],
                                            "lock": threading.Lock()}
        return self.__dict__["_whatif_state"]

    # -- what a prediction may use ---------------------------------------------

    def what_if_needs_assumed_n(self) -> bool:
        """True when nothing public gives the row count (unbounded DP, no public rows)."""
        return (not Neighbours.parse(self.settings.neighbours).n_is_public
                and self.public_rows_frame() is None)

    def what_if_basis(self, assumed_n: int | None = None) -> PublicBasis:
        """The public information a what-if may use. The private table contributes
        only its row count, and only under bounded DP (where it is public)."""
        self.require_data()
        rows = self.public_rows_frame()
        if rows is not None:
            rows = rows[list(self.schema.names)]
        if Neighbours.parse(self.settings.neighbours).n_is_public:
            n = self.n_rows - (len(rows) if self.public_mode in ("flag", "filter") else 0)
            note = f"n = {n:,}, the private table's row count (public under bounded DP)"
        elif rows is not None:
            n = len(rows)
            note = (f"n_pub = {n:,}: under unbounded DP the private row count is not public, "
                    "so the public row count stands in for it")
        else:
            n = int(assumed_n or DEFAULT_ASSUMED_N)
            note = (f"{n:,}, a row count you assumed (under unbounded DP the private row "
                    "count is not public)")
        values = None
        if self.public_columns:
            # the records' public-column values: known for every record (declared public)
            # (disk_table: a file on disk is read for these columns only)
            values = self.private_column_values(self.public_columns)
            if len(values) != n:   # unbounded DP: resampled to the row count used
                values = values.sample(n, replace=len(values) < n, random_state=0)
            values = values.reset_index(drop=True)
        label = self.public_summary().split(", public columns")[0] if rows is not None else None
        return PublicBasis(self.schema, n, note, rows=rows, rows_label=label,
                           public_columns=tuple(self.public_columns), column_values=values)

    def what_if_standins(self) -> list[str]:
        """The stand-ins the current public information allows (best first)."""
        if not self.has_data:
            return []
        out = ["public-rows"] if self.public_mode != "none" else []
        out.append("independent")
        if self.public_columns:
            out.insert(0 if self.public_mode == "none" else 1, "public-columns-fit")
        return out

    def _what_if_settings(self) -> dict:
        s = self.settings
        return dict(workload=s.workload, delta=s.delta, neighbours=s.neighbours, rounds=s.rounds,
                    fit_iters=s.fit_iters, final_fit_iters=s.final_fit_iters,
                    fit_tol=s.fit_tol, max_model_size=s.max_model_size, options=dict(s.options))

    def what_if_key(self, mechanism: str, epsilons: Sequence[float], seeds: int,
                    standin: str, assumed_n: int | None = None) -> str:
        """Identifies a curve: data and public information, settings, mechanism,
        epsilon grid, seeds and stand-in."""
        ident = {"data": self.data_name, "rows": self.n_rows, "schema": self.schema.to_json(),
                 "public": self.public_summary(), "settings": self._what_if_settings(),
                 "mechanism": mechanism, "epsilons": sorted(float(e) for e in epsilons),
                 "seeds": int(seeds), "standin": standin,
                 "assumed_n": assumed_n if self.what_if_needs_assumed_n() else None}
        return hashlib.sha1(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:16]

    # -- running -----------------------------------------------------------------

    @property
    def what_if_running(self) -> bool:
        return self.whatif_worker is not None and not self.whatif_worker.done

    def start_what_if(self, mechanisms: Sequence[str], epsilons: Sequence[float], seeds: int = 1,
                      standin: str | None = None, assumed_n: int | None = None
                      ) -> SweepWorker | None:
        """Predict in the background the curves not cached yet; None if all are cached."""
        self.require_data()
        if self.what_if_running:
            raise ConfigError("A what-if preview is already running.",
                              hint="Wait for it or stop it.")
        mechanisms = list(mechanisms)
        if not mechanisms:
            raise ConfigError("Choose at least one mechanism for the what-if.")
        unknown = [m for m in mechanisms if m not in MECHANISMS]
        if unknown:
            raise ConfigError(f"Unknown mechanism(s): {', '.join(unknown)}.")
        epsilons = sorted({float(e) for e in epsilons})
        if not epsilons:
            raise ConfigError("Choose at least one epsilon for the what-if.")
        for e in epsilons:
            rho_from_epsilon_delta(e, self.settings.delta)
        if not 1 <= int(seeds) <= 10:
            raise ConfigError(f"Use 1 to 10 seeds, not {seeds}.")
        standin = standin or self.what_if_standins()[0]
        if standin not in STANDINS:
            raise ConfigError(f"Unknown stand-in {standin!r}.")
        if standin not in self.what_if_standins():
            raise ConfigError(f"The '{standin}' stand-in is not available here.",
                              hint="Available: " + ", ".join(self.what_if_standins()) + ".")
        self.validate_settings()
        basis = self.what_if_basis(assumed_n)
        settings = self._what_if_settings()
        store = self._whatif_store
        keys = {m: self.what_if_key(m, epsilons, seeds, standin, assumed_n) for m in mechanisms}
        self.whatif_request = {"mechanisms": mechanisms, "epsilons": epsilons, "seeds": int(seeds),
                               "standin": standin, "keys": keys}
        todo = [m for m in mechanisms if keys[m] not in store["cache"]]
        if not todo:
            return None
        jobs = [{"mechanism": m, "epsilon": e, "seed": sd}
                for m in todo for e in epsilons for sd in range(int(seeds))]
        rows: dict[str, list] = {m: [] for m in todo}
        table = self.loads     # the what-if belongs to this table
        started = {m: None for m in todo}
        options = settings.pop("options")

        def run_one(job, should_stop):
            m = job["mechanism"]
            started[m] = started[m] or time.time()
            cfg = run_config(m, job["epsilon"], job["seed"], options=options, **settings)
            err = predict_point(basis, cfg, standin=standin, should_stop=should_stop)
            return None if err is None else {**job, "status": FINISHED, "error": err}

        def on_row(row):
            m = row["mechanism"]
            if row.get("status") == FAILED:
                row = {**row, "failure": row.pop("error", None), "error": None}
            rows[m].append(row)
            if len(rows[m]) == len(epsilons) * int(seeds):
                curve = build_curve(basis, m, standin, rows[m], seeds=seeds,
                                    settings={**settings, "options": options},
                                    seconds=time.time() - started[m])
                with store["lock"]:
                    if curve.failures:
                        store["failed"][keys[m]] = curve     # shown, not cached: may be retried
                    else:
                        store["cache"][keys[m]] = curve
                        store["failed"].pop(keys[m], None)
                    if curve.points:
                        store["log"].append((time.time(), table, curve))

        self.whatif_worker = SweepWorker(jobs, run_one, on_row=on_row,
                                         label=f"what-if: {len(jobs)} stand-in runs").start()
        return self.whatif_worker

    def stop_what_if(self) -> None:
        if self.whatif_worker is not None:
            self.whatif_worker.stop()

    def what_if_curves(self) -> list[WhatIfCurve]:
        """The curves of the latest request that are ready (cached or failed)."""
        req = self.whatif_request
        if not req:
            return []
        store = self._whatif_store
        with store["lock"]:
            out = [store["cache"].get(k) or store["failed"].get(k) for k in req["keys"].values()]
        return [c for c in out if c is not None]

    # -- the release report --------------------------------------------------------

    def what_if_report(self, before: float | None = None, settings=None) -> dict | None:
        """The report's ``what_if`` block: predictions made on the current table before
        ``before`` (a time). Only basis and predicted curves (public information);
        None if none were made. Each curve says whether its settings (workload,
        delta, rounds, ...) are those of ``settings`` (the run's)."""
        store = self._whatif_store
        with store["lock"]:
            made = [c for t, table, c in store["log"]
                    if table == self.loads and (before is None or t <= before)]
        if not made:
            return None
        latest: dict = {}
        for c in made:   # the latest curve per (mechanism, stand-in)
            latest[(c.mechanism, c.standin)] = c
        curves = []
        for c in latest.values():
            entry = c.to_release()
            if settings is not None:
                entry["same_settings_as_run"] = all(
                    getattr(settings, k) == v for k, v in c.settings.items() if hasattr(settings, k))
            curves.append(entry)
        return {"made": True, "rho_spent": 0.0, "note": NOTHING_SPENT,
                "basis": made[-1].basis, "curves": curves}

    def _attach_what_if(self, run, started_at: float | None) -> None:
        """Add the ``what_if`` block to a finished run's report (what-ifs made before it)."""
        if run is None or not run.ok:
            return
        block = self.what_if_report(started_at, run.settings)
        if block is not None:
            check_release(block)
            run.result.report["what_if"] = block
