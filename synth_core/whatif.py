"""What-if budgeting at zero privacy cost: predicted workload error against epsilon.

A prediction runs the real mechanism (through :class:`~synth_core.api.Synthesizer`)
on a *stand-in* table built from public information only, and measures the
workload error of that run against the stand-in private table. Each stand-in
run has its own ledger (it is a simulation); the private table is never an
input: :func:`predict_error_curve` takes a :class:`PublicBasis` (the schema,
the public rows, the records' public-column values and the row count ``n``),
and :class:`PublicBasis` has no place for the private table.

Stand-ins (``STANDINS``):

* ``public-rows``: the public rows, each repeated to ``n`` rows. For a
  mechanism that also uses public rows (JAM-PGM, PMW-Pub, GEM-Pub) the run
  needs a "public" table too: ``public_split="bootstrap"`` (default) draws
  ``n_pub`` rows with replacement from the public rows, so the stand-in public
  table is a sample of the stand-in private distribution of the real public
  table's size; ``"halves"`` splits the public rows into two disjoint halves
  (one plays private, one public).
* ``independent``: every column drawn independently: a public column from its
  1-way marginal (the records' public-column values), else from the public
  rows' 1-way marginal when there are public rows, else uniform over the
  declared domain.
* ``public-columns-fit``: the records' own public-column values (their exact
  joint), with the private columns independent and uniform over the domain.

Under bounded DP (the default) ``n`` is public and the stand-in has ``n``
rows. Under unbounded DP it is not: the caller passes ``n_pub`` (or a number
the user assumes) and says so in ``n_note``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from .api import RunConfig, RunResult, Synthesizer
from .errors import ConfigError
from .mechanisms import MECHANISMS
from .privacy import rho_from_epsilon_delta
from .schema import Schema

STANDINS = {
    "public-rows": "public rows as a stand-in for the private table",
    "independent": "independent marginals (public columns / public rows, else uniform)",
    "public-columns-fit": "fit to the public columns (private columns uniform)",
}
PUBLIC_SPLITS = ("bootstrap", "halves")
NOTHING_SPENT = "No privacy budget was spent: the private table was not used."


@dataclass(frozen=True)
class PublicBasis:
    """What a what-if may use: declared or public information only.

    ``n`` is the number of rows of the stand-in private table: the private
    row count when it is public (bounded DP), else ``n_pub`` or an assumed
    number; ``n_note`` says which. ``column_values`` holds only the public
    columns (the records' values of them, public by the user's declaration).
    """

    schema: Schema
    n: int
    n_note: str
    rows: pd.DataFrame | None = None
    rows_label: str | None = None
    public_columns: tuple[str, ...] = ()
    column_values: pd.DataFrame | None = None

    def __post_init__(self):
        object.__setattr__(self, "public_columns", tuple(self.public_columns))
        if not int(self.n) >= 1:
            raise ConfigError(f"The stand-in needs at least one row, not n = {self.n}.")
        object.__setattr__(self, "n", int(self.n))
        if self.column_values is not None:
            extra = [c for c in self.column_values.columns if c not in self.public_columns]
            if extra:
                raise ConfigError("A what-if may see the public columns only; got "
                                  f"{', '.join(map(str, extra))} as well.")
        if self.rows is not None and len(self.rows) == 0:
            raise ConfigError("The public rows are empty.")

    @property
    def n_pub(self) -> int | None:
        return None if self.rows is None else len(self.rows)

    def available_standins(self) -> list[str]:
        out = ["public-rows"] if self.rows is not None else []
        out.append("independent")
        if self.public_columns and self.column_values is not None:
            out.append("public-columns-fit")
        return out


@dataclass(frozen=True)
class WhatIfPoint:
    """Predicted workload error at one epsilon: mean, min and max over seeds."""

    epsilon: float
    mean: float
    low: float
    high: float
    errors: tuple[float, ...]


@dataclass
class WhatIfCurve:
    """A mechanism's predicted error against epsilon, and what it is based on."""

    mechanism: str
    standin: str
    points: list[WhatIfPoint]
    basis: str
    n: int
    seeds: int
    settings: dict
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    domain_warning: str | None = None
    rho_spent_on_private: float = 0.0

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"mechanism": self.mechanism, "epsilon": p.epsilon,
                              "predicted error": p.mean, "min": p.low, "max": p.high,
                              "seeds": len(p.errors)} for p in self.points])

    def to_release(self) -> dict:
        """The curve for a release report: basis and predicted points only."""
        return {"mechanism": self.mechanism, "standin": self.standin, "basis": self.basis,
                "n": self.n, "seeds": self.seeds, "settings": dict(self.settings),
                "rho_spent": 0.0,
                "points": [{"epsilon": p.epsilon, "predicted_error": p.mean,
                            "min": p.low, "max": p.high} for p in self.points]}


# ---------------------------------------------------------------- stand-in tables


def _repeat_to(df: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``df`` rescaled to ``n`` rows: every row repeated ``n / len(df)`` times
    (randomised rounding, as the public-only baseline does), shuffled."""
    reps = np.full(len(df), n / len(df))
    base = np.floor(reps).astype(int)
    extra = n - int(base.sum())
    if extra > 0:
        base[rng.choice(len(df), size=extra, replace=False)] += 1
    out = df.iloc[np.repeat(np.arange(len(df)), base)]
    return out.iloc[rng.permutation(len(out))].reset_index(drop=True)


def _one_way(schema: Schema, name: str, source: pd.DataFrame | None) -> np.ndarray:
    """A column's 1-way distribution over its codes (uniform without a source)."""
    size = schema.column(name).size
    if source is None:
        return np.full(size, 1.0 / size)
    codes = schema.project([name]).encode(source[[name]], table_name="public",
                                          role="what-if source")[name].to_numpy()
    counts = np.bincount(codes, minlength=size).astype(float)
    return counts / counts.sum()


def _independent_codes(schema: Schema, basis: PublicBasis, rows: int,
                       rng: np.random.Generator) -> pd.DataFrame:
    out = {}
    for name in schema.names:
        if name in basis.public_columns and basis.column_values is not None:
            p = _one_way(schema, name, basis.column_values)
        else:
            p = _one_way(schema, name, basis.rows)
        out[name] = rng.choice(len(p), size=rows, p=p)
    return pd.DataFrame(out)


def standin_tables(basis: PublicBasis, standin: str, *, uses_public_rows: bool, seed: int,
                   public_split: str = "bootstrap") -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(stand-in private table of ``basis.n`` rows, stand-in public table or None)."""
    if standin not in STANDINS:
        raise ConfigError(f"Unknown stand-in {standin!r}.", hint=f"Use one of: {', '.join(STANDINS)}.")
    if standin not in basis.available_standins():
        raise ConfigError(f"The '{standin}' stand-in needs "
                          + ("public rows." if standin == "public-rows" else "public columns."),
                          hint="Choose another stand-in: " + ", ".join(basis.available_standins()) + ".")
    if public_split not in PUBLIC_SPLITS:
        raise ConfigError(f"Unknown public split {public_split!r}.",
                          hint=f"Use one of: {', '.join(PUBLIC_SPLITS)}.")
    if uses_public_rows and basis.rows is None:
        raise ConfigError("This mechanism needs public rows; a what-if without public rows "
                          "cannot simulate it.", hint="Add public rows, or choose a mechanism "
                                                       "that does not use them.")
    rng = np.random.default_rng([seed, 7717])
    schema = basis.schema
    names = list(schema.names)
    if standin == "public-rows":
        rows = basis.rows[names].reset_index(drop=True)
        if uses_public_rows and public_split == "halves":
            if len(rows) < 2:
                raise ConfigError("Splitting the public rows into halves needs at least 2 rows.")
            order = rng.permutation(len(rows))
            half = len(rows) // 2
            return (_repeat_to(rows.iloc[order[:half]], basis.n, rng),
                    rows.iloc[order[half:]].reset_index(drop=True))
        private = _repeat_to(rows, basis.n, rng)
        public = None
        if uses_public_rows:  # bootstrap: n_pub rows drawn from the stand-in distribution
            public = rows.iloc[rng.integers(0, len(rows), len(rows))].reset_index(drop=True)
        return private, public
    if standin == "independent":
        codes = _independent_codes(schema, basis, basis.n, rng)
        public = _independent_codes(schema, basis, basis.n_pub, rng) if uses_public_rows else None
    else:  # public-columns-fit: the public columns' exact joint, uniform private columns
        values = _repeat_to(basis.column_values[list(basis.public_columns)], basis.n, rng)
        pub_schema = schema.project(basis.public_columns)
        codes = pub_schema.encode(values, table_name="public columns", role="what-if source")
        for name in names:
            if name not in basis.public_columns:
                codes[name] = rng.integers(0, schema.column(name).size, basis.n)
        codes = codes[names]
        public = None
        if uses_public_rows:
            public = codes.iloc[rng.integers(0, basis.n, basis.n_pub)].reset_index(drop=True)
    private = schema.decode(codes, rng)
    if standin == "public-columns-fit":  # keep each record's own public values
        for c in basis.public_columns:
            private[c] = values[c].to_numpy()
    return private, None if public is None else schema.decode(public, rng)


def describe_basis(basis: PublicBasis, standin: str, mechanism: str, *,
                   public_split: str = "bootstrap") -> str:
    """What a prediction is based on, in words (for the page and the report)."""
    uses_rows = MECHANISMS[mechanism].capabilities.public_rows
    n = f"{basis.n:,}"
    if standin == "public-rows":
        src = basis.rows_label or "the public rows"
        if uses_rows and public_split == "halves":
            text = (f"Stand-in private table: a random half of the {basis.n_pub:,} public rows "
                    f"({src}), rescaled to {n} rows; stand-in public table: the other half.")
        else:
            text = f"Stand-in private table: the {basis.n_pub:,} public rows ({src}), rescaled to {n} rows."
            if uses_rows:
                text += (f" Stand-in public table: {basis.n_pub:,} rows drawn with replacement "
                         "from the public rows.")
        text += (" The prediction assumes the private table is distributed like the public "
                 "rows; if the public rows are biased it is too optimistic.")
    elif standin == "independent":
        parts = []
        if basis.public_columns and basis.column_values is not None:
            parts.append("public columns from their 1-way marginals")
        rest = "other columns" if parts else "every column"
        parts.append(f"{rest} from the public rows' 1-way marginals" if basis.rows is not None
                     else f"{rest} uniform over the declared domain")
        text = (f"Stand-in private table: {n} rows with independent columns ("
                + "; ".join(parts) + ").")
        if uses_rows:
            text += f" Stand-in public table: {basis.n_pub:,} rows drawn the same way."
        text += (" Real data has dependencies between columns that the stand-in lacks, so "
                 "the prediction is usually too optimistic at small epsilon.")
    else:
        text = (f"Stand-in private table: the {n} records' own values of the public columns "
                f"({', '.join(basis.public_columns)}), with the private columns independent and "
                "uniform over the declared domain.")
        if uses_rows:
            text += f" Stand-in public table: {basis.n_pub:,} rows drawn from it."
    text += f" Rows: {basis.n_note}."
    text += (f" Each point runs {mechanism} itself on the stand-in (its own ledger) and measures "
             "its workload error against the stand-in private table. " + NOTHING_SPENT)
    if basis.schema.source == "private":
        text += (" The domain (category lists, bounds) was read off the private table, so the "
                 "what-if depends on a domain that is not privacy-protected.")
    return text


# ---------------------------------------------------------------- runs


def run_config(mechanism: str, epsilon: float, seed: int, *, workload: str = "all-3way",
               delta: float = 1e-9, neighbours: str = "bounded", rounds: int | None = None,
               fit_iters: int | None = None, final_fit_iters: int = 1000,
               fit_tol: float = 1e-4, max_model_size: float = 80.0, options: dict | None = None) -> RunConfig:
    """The configuration of one stand-in run (always seeded, research mode)."""
    cfg = RunConfig(mechanism, float(epsilon), float(delta), neighbours, workload, rounds,
                    int(seed), float(max_model_size), fit_iters, int(final_fit_iters),
                    float(fit_tol), dict(options or {}), "research")
    cfg.validate()
    return cfg


def standin_run(basis: PublicBasis, config: RunConfig, *, standin: str = "public-rows",
                public_split: str = "bootstrap",
                should_stop: Callable[[], bool] | None = None) -> RunResult | None:
    """One run of the mechanism on a stand-in (its own ledger); None if stopped.
    Its ``curator_diagnostics()`` compare it with the stand-in private table."""
    cfg = config
    private, public = standin_tables(basis, standin, seed=cfg.seed, public_split=public_split,
                                     uses_public_rows=MECHANISMS[cfg.mechanism].capabilities.public_rows)
    synth = Synthesizer.from_config(replace(cfg, mode="research"))
    for _ in synth.run(private, public, schema=basis.schema, public_columns=basis.public_columns,
                       data_name="what-if stand-in", public_name="stand-in public"):
        if should_stop is not None and should_stop():
            return None
    return synth.result


def predict_point(basis: PublicBasis, config: RunConfig, *, standin: str = "public-rows",
                  public_split: str = "bootstrap",
                  should_stop: Callable[[], bool] | None = None) -> float | None:
    """Workload error of one stand-in run against the stand-in private table (None if stopped)."""
    result = standin_run(basis, config, standin=standin, public_split=public_split,
                         should_stop=should_stop)
    return None if result is None else result.curator_diagnostics().workload_error


def build_curve(basis: PublicBasis, mechanism: str, standin: str, rows: Sequence[dict], *,
                seeds: int, settings: dict, public_split: str = "bootstrap",
                seconds: float = 0.0) -> WhatIfCurve:
    """A curve from result rows ``{"epsilon", "error"}`` (failed rows carry ``"failure"``)."""
    by_eps: dict[float, list[float]] = {}
    failures = []
    for r in rows:
        if r.get("error") is not None:
            by_eps.setdefault(float(r["epsilon"]), []).append(float(r["error"]))
        elif r.get("failure"):
            failures.append(f"ε = {float(r['epsilon']):g}: {r['failure']}")
    points = [WhatIfPoint(e, float(np.mean(v)), float(min(v)), float(max(v)), tuple(v))
              for e, v in sorted(by_eps.items())]
    warning = ("The domain was read off the private table (not privacy-protected); the "
               "what-if depends on it." if basis.schema.source == "private" else None)
    return WhatIfCurve(mechanism, standin, points,
                       describe_basis(basis, standin, mechanism, public_split=public_split),
                       basis.n, int(seeds), dict(settings), seconds, failures, warning)


def predict_error_curve(basis: PublicBasis, mechanism: str, epsilons: Sequence[float], *,
                        workload: str = "all-3way", seeds: int = 2, standin: str = "public-rows",
                        public_split: str = "bootstrap", delta: float = 1e-9,
                        neighbours: str = "bounded", rounds: int | None = None,
                        fit_iters: int | None = None, final_fit_iters: int = 1000,
                        max_model_size: float = 80.0, options: dict | None = None,
                        progress: Callable[[int, int], None] | None = None,
                        should_stop: Callable[[], bool] | None = None) -> WhatIfCurve:
    """Predicted workload error of ``mechanism`` at each epsilon, over ``seeds`` seeds.

    Uses only ``basis`` (public information); spends no privacy budget.
    """
    if mechanism not in MECHANISMS:
        raise ConfigError(f"Unknown mechanism {mechanism!r}.",
                          hint=f"Available: {', '.join(MECHANISMS)}.")
    epsilons = sorted(float(e) for e in epsilons)
    if not epsilons:
        raise ConfigError("Choose at least one epsilon.")
    for e in epsilons:
        rho_from_epsilon_delta(e, delta)
    settings = dict(workload=workload, delta=delta, neighbours=neighbours, rounds=rounds,
                    fit_iters=fit_iters, final_fit_iters=final_fit_iters,
                    max_model_size=max_model_size, options=dict(options or {}))
    started = time.perf_counter()
    jobs = [(e, seed) for e in epsilons for seed in range(int(seeds))]
    rows = []
    for e, seed in jobs:
        cfg = run_config(mechanism, e, seed, **settings)
        err = predict_point(basis, cfg, standin=standin, public_split=public_split,
                            should_stop=should_stop)
        if err is None:   # stopped: the curve holds the points so far
            break
        rows.append({"epsilon": e, "seed": seed, "error": err})
        if progress is not None:
            progress(len(rows), len(jobs))
    return build_curve(basis, mechanism, standin, rows, seeds=seeds, settings=settings,
                       public_split=public_split, seconds=time.perf_counter() - started)
