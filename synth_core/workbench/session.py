"""The workbench's session object, in plain Python (no Streamlit).

A :class:`Workbench` holds one browser session's work across pages and is
composed of parts, each in its own module:

* the private table, a :class:`~synth_core.workbench.source.TableSource`
  (in memory, or a file on disk counted by DuckDB);
* the domain (a :class:`~synth_core.schema.Schema`) and how it was made;
* the public information, a :class:`~synth_core.workbench.public.PublicChoice` value;
* the run settings (a :class:`~synth_core.api.RunConfig`), the run in
  progress and the finished runs;
* the comparison (:class:`~synth_core.workbench.compare.CompareService`),
  the what-if preview (:class:`~synth_core.workbench.what_if.WhatIfService`)
  and the tables' budget accounts
  (:class:`~synth_core.workbench.budget.BudgetService`).

Every setter validates first and only then changes state, so a bad input
raises a :class:`SynthError` and leaves what was loaded or produced untouched.
Curator-only values (public proxy error, true workload error) are computed
here for display but never enter a release (:func:`~synth_core.workbench.runs.release_files`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..api import Synthesizer, list_samples, load_sample, prepare_inputs
from ..backends import CountingBackend
from ..budget import run_rho
from ..disk_table import check_backend, load_file_frame, resolve_data_path
from ..errors import ConfigError, DataError, SynthError
from ..evaluate import per_marginal_errors
from ..experiments import DatasetSpec
from ..mechanisms import MECHANISMS, make_mechanism
from ..privacy import Neighbours, cdp_epsilon
from ..runner import RunWorker
from ..schema import Schema, infer_schema
from ..schema_infer import Proposal
from ..tables import PublicInfo, private_as_public_error
from ..whatif import PublicBasis
from ..workload import Workload, parse_workload
from .budget import BudgetService
from .catalog import RunSettings, planned_rounds, supports_public_columns
from .command import CommandParts, reproduce_command
from .compare import CompareService, CompareSetup, compare_key
from .disk import DuckDBSource
from .memory import MemoryTable
from .public import FilteredRows, FlaggedRows, NoPublicRows, PublicChoice, PublicTable
from .runs import FinishedRun, PendingRun, estimate_seconds, release_files, selection_block
from .domain import Domain
from .guide import ChoiceFit, choice_fit, choice_of, mechanism_title
from .source import TableSource
from .uploads import parse_schema_upload, read_upload
from .what_if import (ASSUMED_N_RANGE, DEFAULT_ASSUMED_N, WhatIfRequest, WhatIfService, check_choice,
                      choose_standin, what_if_key, what_if_settings)


#: an uploaded public table of at least this many rows, with at least this share of
#: them records of the private table, gets a warning (:meth:`Workbench.public_overlap_note`)
OVERLAP_MIN_ROWS, OVERLAP_SHARE = 20, 0.9


class Workbench:
    """A session's state: its parts (table source, domain, public information,
    settings, runs, comparison, what-if, budget accounts) and the surface the
    pages call.

    The surface (what ``app.py`` and ``app_pages/*.py`` use):

    * parts and state: ``source``, ``public`` (a PublicChoice: ``public.kind``,
      ``public.columns``, ``public.rows``, ``public.has_rows``), ``settings``,
      ``schema``, ``domain`` (``domain.version``, ``domain.edited``, ``domain.errors``,
      ``domain.left_out``, ``domain.private_columns``, ``domain.table()``,
      ``domain.json_bytes()``), ``target``,
      ``loads``, ``messages``, ``runs``, ``worker``, ``compare``
      (``compare.worker``, ``compare.running``, ``compare.runs``,
      ``compare.stop()``), ``whatif`` (``whatif.worker``, ``whatif.running``,
      ``whatif.curves()``, ``whatif.stop()``), ``budget`` (the tables' budget
      accounts, reached through the budget methods below);
    * the table: ``data``, ``data_name``, ``data_columns``, ``n_rows``,
      ``has_data``, ``needs_domain``, ``out_of_core``, ``load_sample``,
      ``load_upload``, ``load_disk``;
    * the domain: ``load_schema_file``, ``infer_schema_from_public``,
      ``propose_schema``, ``use_proposed_schema``, ``update_column``, ``drop_column``;
    * public information: ``public_summary``, ``private_public_counts``,
      ``set_public_table``, ``flag_candidates``, ``set_public_flag``, ``set_public_filter``,
      ``set_public_columns``, ``clear_public_rows``, ``public_proxy_errors``,
      ``public_reference_error``, ``public_overlap_note``;
    * settings and budget: ``update_settings``, ``mechanism_fit`` (the guided
      list's verdict on the settings' mechanism), ``mechanism_title``, ``workload``,
      ``planned_rounds``, ``estimate_seconds``, ``budget_summary``,
      ``dataset_budget``, ``set_dataset_budget``, ``table_spent``;
    * runs and release: ``start_run``, ``stop_run``, ``running``, ``collect``,
      ``run_by_number``, ``release_files``, ``release_selection``;
    * comparison: ``compare_jobs``, ``start_compare``, ``compare_results``,
      ``compare_store``;
    * what-if: ``what_if_standins``, ``what_if_needs_assumed_n``, ``start_what_if``,
      ``what_if_stale``.

    Public beyond the pages (the release's ``reproduce.sh``, the tests):
    ``reproduce_command``, ``run_kwargs``, ``prepare``, ``public_rows_frame``,
    ``session_rho_spent``, ``validate_settings``, ``require_data``.
    """

    def __init__(self):
        self.loads = 0                   # tables loaded so far (a new table resets the pages)
        self.domain = Domain()
        self.source: TableSource | None = None
        self.target: str | None = None
        self.public = PublicChoice()
        self.settings = RunSettings()
        self.budget = BudgetService()
        self.compare = CompareService(self.budget)
        self.whatif = WhatIfService()
        self.worker: RunWorker | None = None
        self._pending: PendingRun | None = None
        self.runs: list[FinishedRun] = []
        self._proxy_cache: dict = {}
        #: (table source, public rows, note) of the last overlap check: the Public
        #: information page asks on every rerun, and the check hashes the whole table
        self._overlap: tuple | None = None
        self.messages: list[str] = []    # notes for the next page render

    # ---------------------------------------------------------------- the table

    @property
    def schema(self) -> Schema | None:
        """The domain in use (``domain`` says how it was made)."""
        return self.domain.schema

    @property
    def data(self) -> pd.DataFrame | None:
        """The loaded table as the pages show it (a preview when it stays on disk)."""
        return None if self.source is None else self.source.preview

    @property
    def data_name(self) -> str | None:
        return None if self.source is None else self.source.name

    @property
    def data_columns(self) -> list[str]:
        """The loaded table's columns (without a row filter's flag column)."""
        return [] if self.source is None else self.source.columns

    @property
    def n_rows(self) -> int:
        """Rows of the loaded table (of the whole file, when it stays on disk)."""
        return 0 if self.source is None else self.source.n_rows

    @property
    def out_of_core(self) -> bool:
        """The table stays on disk; ``data`` holds a preview only."""
        return self.source is not None and self.source.out_of_core

    @property
    def has_data(self) -> bool:
        return self.source is not None and self.schema is not None

    @property
    def needs_domain(self) -> bool:
        """A table is open but its domain is not declared yet (a file on disk)."""
        return self.source is not None and self.schema is None

    def require_data(self) -> None:
        if not self.has_data:
            raise DataError("No table is loaded yet.",
                            hint="Load a bundled sample or upload a table on the Data page.")

    def _require_table(self) -> None:
        if self.source is None:
            raise DataError("No table is loaded yet.",
                            hint="Load a bundled sample, upload a table or open a file on the "
                                 "Data page.")

    def load_sample(self, name: str) -> None:
        """Load a bundled sample: its private table, public table and declared schema."""
        sample = load_sample(name)
        self._use_source(MemoryTable(sample.private, f"{name}:private", sample=name))
        self.target = sample.target if sample.target in sample.schema.names else None
        self.domain.reset(sample.schema, inferred=False, sample_schema=sample.schema)
        if sample.public is not None:
            self.public = PublicChoice(PublicTable(sample.public_name, sample.public))
        preferred = "jam-pgm" if sample.public is not None else "aim"
        if preferred in MECHANISMS:
            self.settings = replace(self.settings, mechanism=preferred, neighbours="bounded")
        self.settings = replace(self.settings, workload="all-3way")

    def load_upload(self, filename: str, content: bytes) -> None:
        """Load an uploaded CSV/Parquet table; its schema is read off it (not protected)."""
        self._load_frame(read_upload(filename, content), filename)

    def load_disk(self, path_text: str, backend: str = "duckdb") -> None:
        """Open a CSV/Parquet file under an allowed folder (synth_core.disk_table):
        counted where it lies by DuckDB (``duckdb``), or loaded whole (``memory``).
        Checks everything before anything loaded is replaced."""
        check_backend(backend)
        path = resolve_data_path(path_text)
        if backend == "memory":
            self._load_frame(load_file_frame(path), path.name, path=path)
            return
        self._use_source(DuckDBSource.open(path))
        self._use_own_table(None, inferred=False)

    def _load_frame(self, df: pd.DataFrame, filename: str, path: Path | None = None) -> None:
        """Use a loaded table; its schema is read off it (not protected)."""
        frame, dropped = df, []
        while True:  # columns whose domain cannot be read off the data are left out
            try:
                schema = infer_schema(frame, source="private")
                break
            except SynthError as exc:
                if exc.column in frame.columns and len(frame.columns) > 1:
                    dropped.append((exc.column, exc.text("app")))   # the app's controls
                    frame = frame.drop(columns=[exc.column])
                else:
                    raise
        self._use_source(MemoryTable(df, filename, path=path))
        self._use_own_table(schema, inferred=True, left_out=dropped)

    def _use_source(self, source: TableSource) -> None:
        """A new table: the pages reset, nothing public yet."""
        self.loads += 1
        self.source = source
        self.public = PublicChoice()
        self._proxy_cache.clear()

    def _use_own_table(self, schema: Schema | None, *, inferred: bool,
                       left_out: Sequence[tuple[str, str]] = ()) -> None:
        """After loading the user's own table (not a sample): its schema (None: not
        declared yet), no target, the all-3-way workload (all k-way for a table of
        k < 3 columns) and AIM (no public rows yet)."""
        self.domain.reset(schema, inferred=inferred, left_out=left_out)
        self.target = None
        k = 3 if schema is None else min(3, len(schema.names))
        self.settings = replace(self.settings, workload=f"all-{k}way",
                                mechanism="aim" if "aim" in MECHANISMS else self.settings.mechanism)

    # ---------------------------------------------------------------- the domain

    def load_schema_file(self, filename: str, content: bytes) -> None:
        """Declare the domain with a schema JSON file (checked against the tables)."""
        self._require_table()
        schema = parse_schema_upload(filename, content)
        self._check_schema_fits(schema)
        self.domain.use(schema, inferred=False)
        self._proxy_cache.clear()

    def _check_schema_fits(self, schema: Schema, only: str | None = None) -> None:
        """Raise DataError (naming the column) if the loaded tables do not fit ``schema``."""
        target = schema.project([only]) if only else schema
        self.source.check_fits(target, self.public.rows)

    def infer_schema_from_public(self) -> None:
        """Re-read the domain off the public rows (a domain that costs no privacy)."""
        self._require_table()
        pub = self.public_rows_frame()
        if pub is None:
            raise ConfigError("There are no public rows to read a domain from.",
                              hint="Add public rows on the Public information page first.")
        schema = self.source.domain_from_public(pub, self.schema, self.public.rows,
                                                "the public rows")
        self.domain.use(schema, inferred=True)
        self._proxy_cache.clear()

    def propose_schema(self, *, numeric: Sequence[str] = (), categorical: Sequence[str] = (),
                       drop: Sequence[str] = ()) -> Proposal:
        """A schema proposed for review off the table in memory and the public rows
        (:mod:`synth_core.schema_infer`), with the user's choices of kinds."""
        self._require_table()
        if not isinstance(self.source, MemoryTable):
            raise ConfigError("A proposed schema is read off a table in memory.",
                              hint="Open the file with the Memory backend, or declare a schema.")
        return self.source.propose_schema(self.public_rows_frame(), self.public.rows.flag_column,
                                          numeric=numeric, categorical=categorical, drop=drop)

    def use_proposed_schema(self, proposal: Proposal) -> None:
        """Use a reviewed proposal (checked against the tables); the columns it
        leaves out are listed as left out."""
        schema = proposal.schema()
        self._check_schema_fits(schema)
        self.domain.use_reviewed(schema, [(n, "left out in the schema review")
                                          for n in proposal.drops],
                                 private_columns=proposal.read_off_private)
        self.public = replace(self.public, columns=tuple(c for c in self.public.columns
                                                         if c in schema.names))
        self._proxy_cache.clear()

    def update_column(self, name: str, *, kind: str, categories: str | Sequence | None = None,
                      lower=None, upper=None, bins=None, missing: bool = False,
                      declared: bool = False, clip: bool = False) -> None:
        """Replace one column's domain (see :meth:`Domain.edit_column`; ``declared``:
        the user states it is public knowledge), checked against the loaded
        tables; unchanged on error."""
        self.require_data()
        self.domain.edit_column(name, self.data, self._check_schema_fits, kind=kind,
                                categories=categories, lower=lower, upper=upper, bins=bins,
                                missing=missing, declared=declared, clip=clip)
        self._proxy_cache.clear()

    def drop_column(self, name: str) -> None:
        """Leave a column out of the schema (and so out of the synthetic data)."""
        self.require_data()
        self.domain.drop_column(name)
        self.public = replace(self.public, columns=tuple(c for c in self.public.columns
                                                         if c != name))
        self._proxy_cache.clear()

    # ---------------------------------------------------------------- public information

    def public_rows_frame(self) -> pd.DataFrame | None:
        """The public rows as loaded (without flag columns), or None."""
        if self.source is None:
            return None
        return self.public.rows.frame(self.source)

    def public_summary(self) -> str:
        return self.public.summary(self.source)

    def public_overlap_note(self) -> str | None:
        """CURATOR-ONLY: a warning when most rows of an uploaded public table are records
        of the private table (a copy with a few rows removed passes the exact-copy
        check, and public rows are used, or by public-only released, unprotected)."""
        if self.source is None or self.private_public_counts() is not None:
            return None
        if self._overlap is not None and self._overlap[0] is self.source \
                and self._overlap[1] is self.public.rows:
            return self._overlap[2]
        note = self._overlap_note()
        self._overlap = (self.source, self.public.rows, note)
        return note

    def _overlap_note(self) -> str | None:
        public = self.public_rows_frame()
        if public is None or len(public) < OVERLAP_MIN_ROWS:
            return None
        shared = self.source.shared_records(public)
        if shared is None or shared < OVERLAP_SHARE * len(public):
            return None
        return (f"{shared:,} of the {len(public):,} public rows ({shared / len(public):.0%}) are "
                "also records of the private table (CURATOR-ONLY: a count over the private "
                "table). If the public table was made from the private one, it is not public: "
                "its rows would be used, and by the public-only baseline released, without "
                "protection. Public rows from the same population share some records by "
                "chance (half of Titanic's sample rows do), but rarely this many.")

    def private_public_counts(self) -> tuple[int, int] | None:
        """(private rows, public rows) of the loaded table when its public rows
        are rows of it (a flag column or a row filter): a run synthesises the
        private ones only. None when the public rows are not part of the table."""
        if self.source is None or not self.public.splits_private:
            return None
        public = self.source.count_flagged(self.public.rows.flag_column)
        return self.n_rows - public, public

    def clear_public_rows(self) -> None:
        self.require_data()
        self._clear_rows()

    def _clear_rows(self) -> None:
        """No public rows: a row filter's flag column goes, a former flag column
        comes back into an inferred schema."""
        self.source.drop_flag()
        self._restore_flag_column()
        self.public = self.public.with_rows(NoPublicRows())
        self._proxy_cache.clear()

    def _restore_flag_column(self) -> None:
        """Put a former flag column of the table back into an inferred schema
        (when the source can read its domain)."""
        flag = self.public.rows.flag_column
        if (not flag or self.schema is None or flag not in self.source.columns
                or flag in self.schema.names or self.schema.source == "declared"):
            return
        spec = self.source.flag_column_spec(flag)
        if spec is None:
            return
        cols = {c.name: c for c in self.schema.columns}
        cols[flag] = spec
        # the column's domain was read off the private table
        self.domain.replace(Schema(tuple(cols[n] for n in self.data_columns if n in cols),
                                   source="private"),
                            private_columns=self.domain.private_columns | {flag})

    def set_public_table(self, filename: str, content: bytes) -> None:
        """Use an uploaded table as the public rows (checked against the schema;
        without a domain yet, the domain is read off it and checked against the table)."""
        self._require_table()
        df = read_upload(filename, content)
        label = Path(filename).name
        if self.source.holds_records(df):
            raise private_as_public_error(f"public table '{label}'", self.data_name or "data")
        schema = None
        if self.schema is None:
            schema = self.source.domain_from_public(df, None, self.public.rows,
                                                    f"public table '{label}'")
        else:
            self.schema.check_fits(df, label, role="public table")
        self._clear_rows()
        if schema is not None:
            self.domain.replace(schema, inferred=True)
        self.public = self.public.with_rows(PublicTable(label, df))

    def flag_candidates(self) -> list[str]:
        """Columns of the loaded table that hold only true/false values."""
        return [] if self.source is None else self.source.flag_candidates()

    def set_public_flag(self, column: str) -> None:
        """Rows whose ``column`` is true are public; the column leaves the schema.
        Without a domain yet, it is read off the flagged rows (they are public)."""
        self._require_table()
        self.source.check_flag(column)
        schema, inferred = self.schema, self.domain.inferred
        if schema is None:
            schema = self.source.domain_from_public(self.source.public_rows(column), None,
                                                    self.public.rows,
                                                    f"the rows flagged by '{column}'")
            inferred = True
        schema = schema.without_flag(column)
        self._clear_rows()
        self.domain.replace(schema, inferred=inferred)
        self.public = self.public.with_rows(FlaggedRows(column), schema)

    def set_public_filter(self, column: str, values: Sequence) -> None:
        """Rows whose ``column`` value is in ``values`` are public."""
        self._require_table()
        values = tuple(values)
        mask = self.source.filter_mask(column, values)
        rows = FilteredRows(column, values)
        self._clear_rows()
        self.source.add_flag(rows.flag_column, mask)
        self.public = self.public.with_rows(rows)

    def set_public_columns(self, columns: Sequence[str]) -> None:
        self.require_data()
        info = PublicInfo(columns=tuple(columns))
        info.validate(self.schema)
        self.public = replace(self.public, columns=info.columns)

    def public_proxy_errors(self) -> tuple[float, pd.DataFrame] | None:
        """CURATOR-ONLY: the public proxy error (JAM-PGM): how far the public
        rows' marginals are from the private ones, per workload marginal
        (L1 between normalised marginals) and averaged; None without public rows."""
        self.require_data()
        if not self.public.has_rows:
            return None
        key = (id(self.data), self.public.rows, id(self.schema), self.settings.workload)
        if key not in self._proxy_cache:
            inputs = self.prepare()
            workload = parse_workload(self.settings.workload, inputs.schema.names)
            errs = per_marginal_errors(inputs.data.private, inputs.data.public, workload)
            table = pd.DataFrame({"marginal": [" × ".join(k) for k in errs],
                                  "public proxy error": list(errs.values())})
            table = table.sort_values("public proxy error", ascending=False, ignore_index=True)
            self._proxy_cache.clear()
            self._proxy_cache[key] = (float(np.mean(list(errs.values()))), table)
        return self._proxy_cache[key]

    def public_reference_error(self) -> float | None:
        """CURATOR-ONLY: the workload error of the public rows alone (rescaled)."""
        if not self.public.has_rows:
            return None
        return self.public_proxy_errors()[0]

    # ---------------------------------------------------------------- run inputs and settings

    def run_kwargs(self) -> dict:
        """Keyword arguments of ``Synthesizer.run`` for the current state."""
        self.require_data()
        return {**self.source.run_data(), "schema": self.schema,
                "public_columns": self.public.columns, "data_name": self.data_name,
                "drop_columns": self._left_out_columns(), **self.public.rows.run_kwargs()}

    def _left_out_columns(self) -> tuple[str, ...]:
        """Data columns not in the schema: a run leaves them out on request."""
        flag = self.public.rows.flag_column
        return tuple(c for c in self.data_columns if c not in self.schema.names and c != flag)

    def prepare(self):
        """Encode the tables (as a run would); raises SynthError on misfits."""
        kw = self.run_kwargs()
        return prepare_inputs(kw.pop("data"), kw.pop("public", None), **kw)

    def update_settings(self, **changes) -> RunSettings:
        """Validate and apply new run settings (unchanged on error)."""
        new = replace(self.settings, **changes)
        self.validate_settings(new)
        self.settings = new
        self._proxy_cache.clear()
        return new

    def validate_settings(self, s: RunSettings | None = None) -> None:
        s = s or self.settings
        s.validate()
        if self.has_data:
            parse_workload(s.workload, self.schema.names)
        if s.seed is not None and (s.seed < 0 or s.seed >= 2 ** 63):
            raise ConfigError(f"The seed must be a whole number from 0 to 2^63-1, got {s.seed}.")
        options = s.mechanism_options()
        if not self.mechanism_fit(s).available:
            # refused with this public information (mechanism_fit says why; a run
            # refuses to start): only the options it declares are checked
            MECHANISMS[s.mechanism].check_options(options)
            return
        if self.public.columns and supports_public_columns(s.mechanism):
            options["public_columns"] = tuple(self.public.columns)
        # the mechanism checks its own parameters (as Synthesizer.run will build it)
        make_mechanism(s.mechanism, **options)

    def mechanism_fit(self, s: RunSettings | None = None) -> ChoiceFit:
        """How the settings' mechanism (or its conditional variant) fits the
        public information marked and the neighbour relation
        (:mod:`~synth_core.workbench.guide`)."""
        s = s or self.settings
        return choice_fit(choice_of(s.mechanism, s.options), public_rows=self.public.has_rows,
                          public_columns=bool(self.public.columns), neighbours=s.neighbours)

    def mechanism_title(self, s: RunSettings | None = None) -> str:
        """The full name of the settings' mechanism ("Conditional AIM")."""
        s = s or self.settings
        return mechanism_title(s.mechanism, s.options)

    def workload(self) -> Workload:
        self.require_data()
        return parse_workload(self.settings.workload, self.schema.names)

    def planned_rounds(self, s: RunSettings | None = None) -> int | None:
        return planned_rounds(s or self.settings)

    def estimate_seconds(self, s: RunSettings | None = None) -> tuple[float, str]:
        """A rough run-time estimate (seconds) and how it was made."""
        self.require_data()
        return estimate_seconds(s or self.settings, self.schema, self.n_rows, self.data_name,
                                self.runs)

    # ---------------------------------------------------------------- budget

    def _fingerprint(self) -> str:
        """CURATOR-ONLY: the loaded table's fingerprint (its budget account's key)."""
        if self.source is None:
            raise DataError("No table is loaded yet.",
                            hint="Load a table on the Data page before setting its budget.")
        return self.source.fingerprint()

    def dataset_budget(self):
        """The loaded table's budget account, or None if its total is not set."""
        return None if self.source is None else self.budget.account(self._fingerprint())

    def table_spent(self) -> tuple[float, str]:
        """(rho spent on the loaded table, what that counts): see
        :meth:`~synth_core.workbench.budget.BudgetService.table_spent`."""
        return self.budget.table_spent(self._fingerprint())

    def set_dataset_budget(self, epsilon: float, delta: float, label: str | None = None):
        """Set the loaded table's total budget (see BudgetService.create)."""
        fingerprint = self._fingerprint()
        return self.budget.create(fingerprint, epsilon, delta, label or self.data_name or "data",
                                  fingerprint_of=self.source.fingerprint_of)

    def session_rho_spent(self) -> float:
        """Budget charged by this session's runs (finished, stopped or failed, and
        the one in progress) and comparison runs, on any table. zCDP composes by adding rho."""
        total = sum(r.rho_spent for r in self.runs) + self.compare.rho
        if self.running:
            total += self.worker.rho_spent
        return total

    def budget_summary(self) -> dict:
        """rho a run of the settings may spend (:func:`~synth_core.budget.run_rho`: 0 for
        a mechanism that spends none) and what this session's runs spent."""
        s = self.settings
        rho = run_rho(s.mechanism, s.epsilon, s.delta)
        spent = self.session_rho_spent()
        return {"rho": rho, "session_rho": spent,
                "session_epsilon": cdp_epsilon(spent, s.delta) if spent > 0 else 0.0,
                "runs": len(self.runs), "compare_runs": self.compare.runs,
                "running": self.running}

    # ---------------------------------------------------------------- runs

    @property
    def running(self) -> bool:
        return self.worker is not None and not self.worker.done

    def start_run(self) -> RunWorker:
        """Check the inputs and start a run in a background thread."""
        self.require_data()
        self._refuse_if_busy()
        self.collect()
        s = self.settings
        fit = self.mechanism_fit(s)
        if not fit.available:
            raise ConfigError(f"{fit.choice.title} cannot run with this public information: "
                              f"{fit.refusal}.", hint=fit.reason)
        self.validate_settings(s)
        synth = self._synthesizer(s)
        what = f"{self.mechanism_title(s)}, ε={s.epsilon:g}"
        label = f"{what} on {self.data_name}"
        kwargs = self.run_kwargs()
        # charged to the table's account before the run reads the data; settled when it
        # ends. The history entry names no table: every later release carries it, and
        # the account is the table's
        held = self.budget.reserve(self._fingerprint(), synth.config, what,
                                   kwargs["public_columns"], kwargs.get("public_flag"))
        self.worker = RunWorker(synth, kwargs, label=label,
                                on_done=lambda w: self.budget.settle_run(held, w)).start()
        self._pending = PendingRun(s, self.reproduce_command(s), self.data_name,
                                   held.fingerprint, self.public_summary(), held.guarantee)
        return self.worker

    def _refuse_if_busy(self) -> None:
        if self.running:
            raise ConfigError("A run is already in progress.", hint="Stop it or wait for it to finish.")
        if self.compare.running:
            raise ConfigError("A comparison is in progress.",
                              hint="Stop it on the Compare page or wait for it to finish.")

    def _synthesizer(self, s: RunSettings) -> Synthesizer:
        """The run of settings ``s`` with the session's public columns."""
        if not self.public.columns:
            return Synthesizer.from_config(s)
        if not supports_public_columns(s.mechanism):
            raise ConfigError(f"{s.mechanism} does not use public columns yet.",
                              hint="Clear the public columns on the Public information "
                                   "page, or choose a mechanism that supports them.")
        options = {**s.options, "public_columns": tuple(self.public.columns)}
        return Synthesizer.from_config(replace(s, options=options))

    def stop_run(self) -> None:
        if self.worker is not None:
            self.worker.stop()

    def collect(self) -> FinishedRun | None:
        """Move a finished worker into ``runs`` (once). Returns the new run, if any.
        A finished run keeps its counts; its counting backend (a DuckDB
        connection, stored codes) is closed."""
        w = self.worker
        if w is None or not w.done:
            return None
        p = self._pending
        run = FinishedRun(len(self.runs) + 1, w.label, w.status, p.settings, w.events,
                          w.rho_spent, w.seconds, w.result, w.failure, p.reproduce, p.data_name,
                          p.fingerprint, p.guarantee)
        # what-ifs made before the run, from the public information it had
        self.whatif.attach(run, self.loads, w.started_at, p.public)
        self.runs.append(run)
        self.worker = None
        if run.result is not None and isinstance(run.result.inputs.data.private, CountingBackend):
            run.result.inputs.data.private.close()
        return run

    def run_by_number(self, number: int) -> FinishedRun:
        for run in self.runs:
            if run.number == number:
                return run
        raise ConfigError(f"There is no run {number}.")

    def release_selection(self, run: FinishedRun) -> dict | None:
        """The ``release_selection`` block of ``run``'s report (see
        :func:`~synth_core.workbench.runs.selection_block`): None when the run is
        all that was spent on its table, else what covers it if it was chosen
        among the table's runs."""
        table_rho, where = self.budget.table_spent(run.fingerprint)
        # what the run's own statement is made at: its budget (0 for the public-only baseline)
        stated = run_rho(run.settings.mechanism, run.settings.epsilon, run.settings.delta)
        return selection_block(run.rho_spent, table_rho, run.settings.delta, where,
                               self.budget.table_guarantees(run.fingerprint), run.guarantee,
                               stated)

    def release_files(self, run: FinishedRun) -> dict[str, bytes]:
        """The releasable files of a finished run (no curator-only values), its
        report with the table's other runs counted (:meth:`release_selection`)."""
        return release_files(run, self.release_selection(run))

    def reproduce_command(self, s: RunSettings | None = None) -> str:
        """A ``synth run`` command (with comments) that repeats a run with these
        settings on the session's table (see
        :func:`~synth_core.workbench.command.reproduce_command`)."""
        s = s or self.settings
        self.require_data()
        public, public_notes = self.public.cli(self._sample_public_name(), self.data_columns)
        schema, schema_notes = self._schema_cli()
        parts = CommandParts(data=tuple(self.source.cli_data_args()), public=tuple(public),
                             public_notes=tuple(public_notes), schema=schema,
                             schema_notes=schema_notes,
                             has_budget_account=self.dataset_budget() is not None)
        return reproduce_command(s, parts)

    def _schema_cli(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``--schema schema.json`` and its notes, unless the CLI finds the same
        domain itself: a bundled sample's declared schema, or (without
        ``--schema``) the domain read off the public rows, else the private table."""
        cli_source = "public" if self.public.has_rows else "private"
        left_out = self._left_out_columns()
        drop = ("--drop", ",".join(left_out)) if left_out else ()
        if self.domain.is_sample_schema or self.domain.read_unedited_from(cli_source):
            return drop, ()
        notes = ["schema.json: download it from the Release page"]
        if self.schema.source == "public":
            notes.append("note: this domain was read off the public rows; the CLI will "
                         "record it as declared")
        elif self.schema.source == "private":
            notes.append("note: this domain was read off the private table; schema.json says "
                         "so in its 'review' block, and a run with it is not protected until "
                         "the values are replaced and the block deleted")
        return ("--schema", "schema.json", *drop), tuple(notes)

    def _sample_public_name(self) -> str | None:
        """The file name of the bundled sample's public table, if it has one."""
        if not self.source.sample:
            return None
        for p in list_samples():
            if p["name"] == self.source.sample and p.get("public"):
                return Path(p["public"]).name
        return None

    # ---------------------------------------------------------------- comparison

    def _compare_setup(self) -> CompareSetup:
        """The session's data, public information and fixed settings, as a comparison runs them."""
        self.require_data()
        kw = self.run_kwargs()
        s = self.settings
        key = compare_key(self.data_name, self.n_rows, self.schema.to_json(),
                          self.public_summary(), s)
        dataset = DatasetSpec(name=self.data_name or "data", data=kw["data"],
                              public=kw.get("public"), schema=self.schema,
                              public_flag=kw.get("public_flag"),
                              public_columns=tuple(self.public.columns), key=key,
                              backend=self.source.backend, drop_columns=kw["drop_columns"])
        return CompareSetup(dataset, s, self._fingerprint())

    def compare_store(self):
        """The result store of the current setup (data, public information, settings)."""
        return self._compare_setup().store

    def compare_results(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """CURATOR-ONLY: (one row per run, per-marginal errors) saved for the current setup."""
        return self.compare.results(self._compare_setup())

    def compare_jobs(self, mechanisms: Sequence[str], epsilons: Sequence[float],
                     seeds: int) -> tuple[list[dict], int]:
        """The jobs still to run and how many are already saved (resume)."""
        return self.compare.jobs(self._compare_setup(), mechanisms, epsilons, seeds)

    def start_compare(self, mechanisms: Sequence[str], epsilons: Sequence[float], seeds: int):
        """Run the missing (mechanism, epsilon, seed) jobs in the background."""
        self._refuse_if_busy()
        return self.compare.start(self._compare_setup(), mechanisms, epsilons, seeds)

    # ---------------------------------------------------------------- what-if

    def what_if_needs_assumed_n(self) -> bool:
        """True when nothing public gives the row count (unbounded DP, no public rows)."""
        return (not Neighbours.parse(self.settings.neighbours).n_is_public
                and self.public_rows_frame() is None)

    def what_if_standins(self) -> list[str]:
        """The stand-ins the current public information allows (best first)."""
        if not self.has_data:
            return []
        has_rows = self.public.has_rows
        out = ["public-rows"] if has_rows else []
        out.append("independent")
        if self.public.columns:
            out.insert(1 if has_rows else 0, "public-columns-fit")
        return out

    def what_if_stale(self) -> str | None:
        """The public information the latest what-if was based on, when it is no
        longer what is marked (its curves are then out of date); None otherwise."""
        return self.whatif.stale(self.public_summary())

    def _what_if_basis(self, assumed_n: int | None = None) -> PublicBasis:
        """The public information a what-if may use. The private table contributes
        only its row count, and only under bounded DP (where it is public)."""
        rows = self.public_rows_frame()
        if rows is not None:
            rows = rows[list(self.schema.names)]
        if Neighbours.parse(self.settings.neighbours).n_is_public:
            n = self.n_rows - (len(rows) if self.public.splits_private else 0)
            note = f"n = {n:,}, the private table's row count (public under bounded DP)"
        elif rows is not None:
            n = len(rows)
            note = (f"n_pub = {n:,}: under unbounded DP the private row count is not public, "
                    "so the public row count stands in for it")
        else:
            n = int(assumed_n or DEFAULT_ASSUMED_N)
            note = (f"{n:,}, " + ("a row count you assumed" if assumed_n else
                                  "the default row count (none was given: set the assumed "
                                  "row count)")
                    + " (under unbounded DP the private row count is not public)")
        values = None
        if self.public.columns:
            # the records' public-column values: known for every record (declared public);
            # a file on disk is read for these columns only
            values = self.source.private_rows(self.public.columns, self.public.rows.flag_column)
            if len(values) != n:   # unbounded DP: resampled to the row count used
                values = values.sample(n, replace=len(values) < n, random_state=0)
            values = values.reset_index(drop=True)
        label = None
        if rows is not None:   # the basis text gives the row count itself: not twice
            label = re.sub(r" \([\d,]+ rows\)$", "",
                           self.public_summary().split(", public columns")[0])
        return PublicBasis(self.schema, n, note, rows=rows, rows_label=label,
                           public_columns=tuple(self.public.columns), column_values=values)

    def start_what_if(self, mechanisms: Sequence[str], epsilons: Sequence[float], seeds: int = 1,
                      standin: str | None = None, assumed_n: int | None = None):
        """Predict in the background the curves not cached yet; None if all are cached."""
        self.require_data()
        self.whatif.check_idle()
        mechanisms, epsilons = check_choice(mechanisms, epsilons, seeds, self.settings.delta)
        standin = choose_standin(standin, self.what_if_standins())
        self.validate_settings()
        if assumed_n is not None:
            if not self.what_if_needs_assumed_n():
                raise ConfigError(
                    "An assumed row count applies only under unbounded DP without public "
                    "rows; here the row count comes from "
                    + ("the private table (public under bounded DP)."
                       if Neighbours.parse(self.settings.neighbours).n_is_public
                       else "the public rows."), hint="Leave the assumed row count out.")
            low, high = ASSUMED_N_RANGE
            if isinstance(assumed_n, bool) or not isinstance(assumed_n, int) \
                    or not low <= assumed_n <= high:
                raise ConfigError(f"The assumed row count must be a whole number from {low:,} "
                                  f"to {high:,}, not {assumed_n!r}: the stand-in tables have "
                                  "that many rows.")
        basis = self._what_if_basis(assumed_n)
        context = {"data": self.data_name, "rows": self.n_rows, "schema": self.schema.to_json(),
                   "public": self.public_summary(),
                   "settings": what_if_settings(self.settings)}
        assumed = assumed_n if self.what_if_needs_assumed_n() else None
        keys = {m: what_if_key(context, m, epsilons, seeds, standin, assumed) for m in mechanisms}
        request = WhatIfRequest(tuple(mechanisms), tuple(epsilons), int(seeds), standin, keys,
                                public=self.public_summary())
        return self.whatif.start(basis, self.settings, request, self.loads)
