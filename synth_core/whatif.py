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

Estimates (no run): :class:`NoiseEstimator` predicts the error at every
epsilon at once from the expected noise of the mechanism's measurements,

    x(eps) = mean over workload marginals r of sqrt(2/pi) * sigma(eps) * cells(r) / n,
    sigma(eps) = gaussian_std(rho(eps, delta) / R, marginal L2 sensitivity),

(``R`` the mechanism's planned rounds) and the error model
``estimate(eps) = min(ceiling, floor + scale * x(eps) ** exponent)``. Before any stand-in
run, ``floor`` is a share of the stand-in's error floor (the workload error
of the stand-in public table against the stand-in private one for a
mechanism that uses public rows, else 0), ``scale`` (one for mechanisms that
use public information, one for those that use none) and the share are the
stored prior (``CALIBRATION``, with how it was made) and ``ceiling`` is the error of uniform marginals
against the stand-in private table. Each measured point recalibrates
``floor`` and ``scale`` (:func:`calibrate`); every point of a curve is marked
``estimate`` or ``measured``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from .api import RunConfig, RunResult, Synthesizer
from .engine import expected_noise_l1
from .errors import ConfigError
from .evaluate import normalised_l1, workload_error
from .marginals import CodedTable
from .mechanisms import MECHANISMS
from .privacy import Neighbours, gaussian_std, rho_from_epsilon_delta
from .schema import Schema
from .workload import parse_workload

STANDINS = {
    "public-rows": "public rows as a stand-in for the private table",
    "independent": "independent marginals (public columns / public rows, else uniform)",
    "public-columns-fit": "fit to the public columns (private columns uniform)",
}
PUBLIC_SPLITS = ("bootstrap", "halves")
NOTHING_SPENT = ("No privacy budget was spent: the stand-in runs read no private record "
                 "(a domain read off the private table is not protected either way, and is "
                 "warned of separately).")
ESTIMATE, MEASURED = "estimate", "measured"
#: the lowest and highest ratio real error / predicted error measured for JAM-PGM with
#: the default ``bootstrap`` stand-in (benchmarks/whatif.py on the JAM paper's Adult
#: splits and Titanic; docs/whatif.md, "How well it predicts")
MEASURED_RATIOS = (0.56, 1.36)
ACCURACY_NOTE = (f"Measured against real JAM-PGM runs at its defaults (30 rounds, all 3-way "
                 f"marginals; docs/whatif.md), the real error was "
                 f"{MEASURED_RATIOS[0]:.2f} to {MEASURED_RATIOS[1]:.2f} times the default "
                 "stand-in's prediction: lower where the private table is smoother than the "
                 "stand-in made from its public rows (Adult), higher where the real public rows "
                 "are farther from the private ones than the stand-in can show (Titanic).")
#: mechanisms a what-if does not predict, and why: a mechanism that spends no budget has
#: the same error at every epsilon, and that error (how far the public rows are from the
#: private table) is exactly what public information cannot show
NOT_PREDICTED = {
    "public-only": ("the public-only baseline spends no budget, so its error is the same at "
                    "every epsilon, and that error (how far the public rows are from the "
                    "private table) is what a prediction from public information cannot see: "
                    "on a stand-in built from the public rows it would only show their sampling "
                    "noise. Its real error is on the Public information page (curator-only)."),
}


def check_predicted(mechanism: str) -> None:
    """ConfigError for a mechanism the what-if does not predict (:data:`NOT_PREDICTED`)."""
    if mechanism in NOT_PREDICTED:
        raise ConfigError(f"No what-if for {mechanism}: {NOT_PREDICTED[mechanism]}",
                          hint="Leave it out of the what-if; compare it on the Compare page or "
                               "read its error on the Public information page.")


#: a public-rows stand-in curve reads "flat" when its measured errors over at least
#: :data:`FLAT_SPAN` (a decade) of epsilon stay within this factor of each other
FLAT_RATIO = 1.25
FLAT_SPAN = 10.0


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
    """Predicted workload error at one epsilon: mean, min and max over seeds
    (``kind`` ``measured``), or an estimate without a run (``kind`` ``estimate``,
    no seeds)."""

    epsilon: float
    mean: float
    low: float
    high: float
    errors: tuple[float, ...]
    kind: str = MEASURED


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

    @property
    def complete(self) -> bool:
        """Every point measured by stand-in runs (no estimate left)."""
        return bool(self.points) and all(p.kind == MEASURED for p in self.points)

    @property
    def flat_note(self) -> str | None:
        """Why a nearly flat curve of a mechanism that uses public rows, on the
        public-rows stand-in, says little about the real table (None otherwise).

        On that stand-in the public rows and the stand-in private table come from
        the same rows, so the error stays near those rows' sampling floor and epsilon
        buys little; on the real table the gain depends on how far the real public
        rows are from the private ones, which public information alone cannot show."""
        mech = MECHANISMS.get(self.mechanism)
        measured = [p for p in self.points if p.kind == MEASURED]
        if (self.standin != "public-rows" or mech is None or not mech.capabilities.public_rows
                or len(measured) < 2):
            return None
        eps = [p.epsilon for p in measured]
        errs = [p.mean for p in measured]
        if max(eps) < FLAT_SPAN * min(eps) or max(errs) > FLAT_RATIO * min(errs):
            return None
        return (f"The predicted error hardly changes with epsilon (between {min(errs):.3g} and "
                f"{max(errs):.3g} for epsilon {min(eps):g} to {max(eps):g}). On this stand-in "
                "the public rows are drawn from the same rows as the stand-in private table, so "
                "whatever the budget the error stays near what those rows can show (their "
                "sampling floor), and more budget buys little. On the real table the gain from "
                "epsilon depends on how far the real public rows are from the private ones, "
                "which a prediction from public information alone cannot see: read this curve "
                "as what the public rows give if they are unbiased, not as a forecast.")

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"mechanism": self.mechanism, "epsilon": p.epsilon,
                              "predicted error": p.mean, "min": p.low, "max": p.high,
                              "seeds": len(p.errors), "kind": p.kind} for p in self.points])

    def to_release(self) -> dict:
        """The curve for a release report: basis and predicted points only."""
        return {"mechanism": self.mechanism, "standin": self.standin, "basis": self.basis,
                "n": self.n, "seeds": self.seeds, "settings": dict(self.settings),
                "rho_spent": 0.0,
                "points": [{"epsilon": p.epsilon, "predicted_error": p.mean,
                            "min": p.low, "max": p.high, "kind": p.kind} for p in self.points]}


def ranking_note(curves: Sequence[WhatIfCurve]) -> str | None:
    """Why the public-rows stand-in cannot rank mechanisms that use the public rows
    against ones that do not (None unless ``curves`` hold both kinds on it): its
    public rows are an unbiased sample of its private table by construction."""
    on_rows = [c for c in curves if c.standin == "public-rows" and c.mechanism in MECHANISMS]
    kinds = {MECHANISMS[c.mechanism].capabilities.public_rows for c in on_rows}
    if kinds != {True, False}:
        return None
    return ("These curves rank mechanisms that use the public rows against ones that do not. "
            "On this stand-in the public rows are drawn like the private table by "
            "construction, so the mechanisms that use them look as good as unbiased public rows "
            "allow; on the real table, public rows that differ from the private ones can turn "
            "the ranking round. Trust the order between the two kinds only if the public rows "
            "are known to be drawn like the private records.")


def target_note(curve: WhatIfCurve, target: float, title: str | None = None) -> str:
    """Which epsilon of ``curve``'s grid the prediction says reaches a workload error
    of ``target``: the smallest whose predicted error (the highest seed, for a
    measured point: the spread over seeds is part of the prediction) is at most
    ``target``; else how close the grid came. A prediction, not a promise: on the
    real table the error can be higher or lower (docs/whatif.md, "How well it
    predicts")."""
    name = title or curve.mechanism
    points = sorted(curve.points, key=lambda p: p.epsilon)
    reached = [p for p in points if p.high <= target]
    caveat = (" A prediction from public information only: the real error can be higher or "
              "lower (docs/whatif.md, 'How well it predicts').")
    if reached:
        p = reached[0]
        kind = "predicted" if p.kind == MEASURED else "estimated, no stand-in run yet"
        return (f"{name}: epsilon {p.epsilon:g} is the smallest on this grid predicted to reach "
                f"a workload error of {target:g} ({p.high:.3g}, {kind})." + caveat)
    best = min(points, key=lambda p: p.high)
    return (f"{name}: no epsilon on this grid is predicted to reach {target:g}; the lowest "
            f"is {best.high:.3g} at epsilon {best.epsilon:g}. A larger epsilon may help if the "
            "curve still falls there; where it has flattened, more budget buys little." + caveat)


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
        if uses_rows:
            text += (" The prediction assumes the private table is distributed like the public "
                     "rows; if the public rows are biased it is too optimistic (the mechanism "
                     "trusts public measurements that, on the real table, are off).")
        else:
            text += (" The prediction assumes the private table is distributed like the public "
                     "rows; this mechanism does not use them, so how far off it is depends on "
                     "how much harder or easier the real table is to fit: it can be too high or "
                     "too low.")
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
                seconds: float = 0.0, estimates: dict[float, float] | None = None) -> WhatIfCurve:
    """A curve from result rows ``{"epsilon", "error"}`` (failed rows carry ``"failure"``);
    an epsilon of ``estimates`` without a finished row gets an ``estimate`` point."""
    by_eps: dict[float, list[float]] = {}
    failures = []
    for r in rows:
        if r.get("error") is not None:
            by_eps.setdefault(float(r["epsilon"]), []).append(float(r["error"]))
        elif r.get("failure"):
            failures.append(f"ε = {float(r['epsilon']):g}: {r['failure']}")
    points = [WhatIfPoint(e, float(np.mean(v)), float(min(v)), float(max(v)), tuple(v))
              for e, v in by_eps.items()]
    points += [WhatIfPoint(float(e), float(v), float(v), float(v), (), ESTIMATE)
               for e, v in (estimates or {}).items() if float(e) not in by_eps]
    points.sort(key=lambda p: p.epsilon)
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
    check_predicted(mechanism)
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


# ---------------------------------------------------------------- estimates (no run)


def planned_rounds(config: RunConfig, columns: int) -> int:
    """``R``, the rounds the mechanism plans: the run's ``rounds``, else the
    mechanism's declared default, else the number of columns. A constant
    factor on ``R`` scales every ``x(eps)`` alike and is absorbed by the
    calibrated ``scale``."""
    rounds = config.mechanism_options().get("rounds")
    if rounds is None:
        rounds = MECHANISMS[config.mechanism].option_defaults().get("rounds")
    return max(1, int(rounds or columns))


def round_sigma(config: RunConfig, rounds: int) -> float:
    """Gaussian std of one round's measurement: ``rho(eps, delta)`` split evenly
    over ``rounds`` (privacy.gaussian_std at the marginal L2 sensitivity)."""
    rho = rho_from_epsilon_delta(config.epsilon, config.delta)
    sensitivity = Neighbours.parse(config.neighbours).marginal_l2_sensitivity
    return gaussian_std(rho / rounds, sensitivity)


def noise_term(config: RunConfig, cells: Sequence[int], n: int, rounds: int) -> float:
    """``x(eps)``: mean over the workload marginals of the expected normalised L1
    noise of one measurement at the round's sigma, ``sqrt(2/pi) * sigma * cells / n``."""
    sigma = round_sigma(config, rounds)
    return float(np.mean([expected_noise_l1(sigma, c) / n for c in cells]))


#: The error model's shape and prior, ``estimate = floor + scale * x ** exponent``
#: with ``floor = floor_share * the stand-in floor``, and how they were made.
#: ``scale`` is the prior of a mechanism that uses public information (JAM-PGM
#: answers many rounds from public data without noise, so its error grows
#: slowly with x); ``scale_private_only`` that of one that uses none (floor 0).
#: Measured points replace the prior scale and floor (:func:`calibrate`); the
#: exponent stays.
CALIBRATION = {
    "exponent": 0.5,
    "scale": 0.025,
    "scale_private_only": 0.35,
    "how_private_only": (
        "MWEM+PGM, AIM, MST, PrivBayes+PGM and Independent on the titanic sample's "
        "public-rows stand-in, seed 0, epsilon 0.1, 0.3, 1, 3 and 10, all-3way (default "
        "rounds) and all-2way (6 rounds, 20 fit iterations, 100 final): the geometric mean "
        "of error / x ** 0.5 over the 50 runs is 0.348, rounded to 0.35; every estimate is "
        "then within a factor 2.8 of the run (the worst: Independent at epsilon 10, whose "
        "error stops falling at its independence floor; MWEM+PGM within 1.4). With the "
        "public-information 0.025 the estimates are 6 to 39 times below the runs "
        "(benchmarks/whatif_prior.py)."),
    "floor_share": 0.75,
    "how": ("JAM-PGM (30 rounds, all-3way, delta 1e-9, bounded DP) on the titanic sample's "
            "public-rows stand-in, seed 0, measured errors 0.4125, 0.2662, 0.2115 at "
            "epsilon 0.1, 1, 10 (x = 81.6, 8.87, 1.04). Fitting floor and scale through "
            "epsilon 0.1 and 10 predicts epsilon 1 at 0.261 with exponent 1/2 and at 0.231 "
            "with exponent 1 (a mechanism measures smaller marginals when the noise is "
            "large, so the error grows more slowly than the noise); the scale is the "
            "fitted one, 0.0251, rounded; the fitted floor, 0.186, is 0.75 of the "
            "stand-in floor (0.249), so the prior floor is 0.75 of the stand-in floor."),
}


def calibrate(xs: Sequence[float], ys: Sequence[float], floor: float,
              scale: float = CALIBRATION["scale"]) -> tuple[float, float]:
    """(floor, scale) of ``y = floor + scale * u`` fitted to measured points
    (``u = x ** exponent``).

    No point: the prior. One point: the prior floor (capped by ``y``) and the
    scale through the point. Two or more: least squares with both >= 0.
    """
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    if xs.size == 0:
        return floor, scale
    if xs.size == 1 or np.ptp(xs) == 0:
        y, x = float(ys.mean()), float(xs.mean())
        floor = min(floor, y)
        return floor, max(0.0, (y - floor) / x) if x > 0 else 0.0
    b, a = np.polyfit(xs, ys, 1)
    if b < 0:
        return float(ys.mean()), 0.0
    if a < 0:
        return 0.0, float((xs @ ys) / (xs @ xs))
    return float(a), float(b)


@dataclass
class NoiseEstimator:
    """The error model of one mechanism on one stand-in (see the module
    docstring): ``x(eps)`` from the privacy arithmetic, the stand-in's floor
    and ceiling from the stand-in tables (public information only)."""

    settings: dict
    mechanism: str
    cells: tuple[int, ...]
    n: int
    rounds: int
    floor: float
    ceiling: float
    #: the prior scale (``CALIBRATION``: with or without public information)
    scale: float = CALIBRATION["scale"]

    def x(self, epsilon: float) -> float:
        cfg = run_config(self.mechanism, epsilon, 0, **self.settings)
        return noise_term(cfg, self.cells, self.n, self.rounds)

    def u(self, epsilon: float) -> float:
        """``x(eps) ** exponent``: the term the error is linear in."""
        return self.x(epsilon) ** CALIBRATION["exponent"]

    def estimates(self, epsilons: Sequence[float],
                  measured: dict[float, float] | None = None) -> dict[float, float]:
        """Estimated error at each epsilon, calibrated on ``measured`` (epsilon: error)."""
        measured = measured or {}
        floor, scale = calibrate([self.u(e) for e in measured], list(measured.values()),
                                 self.floor, self.scale)
        return {float(e): float(min(self.ceiling, floor + scale * self.u(e))) for e in epsilons}


def uniform_error(private: CodedTable, cliques: Sequence) -> float:
    """Workload error of uniform marginals against ``private`` (the no-information ceiling)."""
    errs = []
    for cl in cliques:
        m = private.marginal(cl)
        errs.append(normalised_l1(m, np.ones_like(m, dtype=float)))
    return float(np.mean(errs))


def noise_estimator(basis: PublicBasis, mechanism: str, settings: dict, *,
                    standin: str = "public-rows", public_split: str = "bootstrap",
                    seed: int = 0) -> NoiseEstimator:
    """The error model of ``mechanism`` with run ``settings`` on ``standin``
    (reads ``basis`` only: the stand-in tables and the schema)."""
    check_predicted(mechanism)
    cfg = run_config(mechanism, 1.0, seed, **settings)
    schema = basis.schema
    workload = parse_workload(cfg.workload, list(schema.names))
    sizes = schema.sizes
    cells = tuple(int(np.prod([sizes[c] for c in cl])) for cl in workload.cliques)
    uses_rows = MECHANISMS[mechanism].capabilities.public_rows
    private, public = standin_tables(basis, standin, uses_public_rows=uses_rows, seed=seed,
                                     public_split=public_split)

    def coded(df):
        return CodedTable.from_frame(schema.encode(df, table_name="stand-in",
                                                   role="what-if estimate"), sizes)

    private_codes = coded(private)
    floor = 0.0 if public is None else (CALIBRATION["floor_share"]
                                        * workload_error(private_codes, coded(public), workload))
    # public information this run uses: the stand-in's public rows, or public columns
    # (a mechanism that takes them, with some declared)
    uses_public = public is not None or (
        bool(basis.public_columns) and MECHANISMS[mechanism].capabilities.uses_public_columns)
    return NoiseEstimator(dict(settings), mechanism, cells, basis.n,
                          planned_rounds(cfg, len(schema.names)), floor,
                          uniform_error(private_codes, workload.cliques),
                          CALIBRATION["scale" if uses_public else "scale_private_only"])


def refine_order(epsilons: Sequence[float]) -> list[float]:
    """The order stand-in runs measure the epsilons: the smallest, the largest,
    then the rest from the middle out (the ends pin the calibration first)."""
    eps = sorted(float(e) for e in epsilons)
    if len(eps) <= 2:
        return eps
    ends, middle = [eps[0], eps[-1]], eps[1:-1]
    centre = (len(middle) - 1) / 2
    return ends + sorted(middle, key=lambda e: abs(middle.index(e) - centre))


def estimate_error_curve(basis: PublicBasis, mechanism: str, epsilons: Sequence[float], *,
                         standin: str = "public-rows", public_split: str = "bootstrap",
                         **settings) -> WhatIfCurve:
    """A curve of estimates only (no run): :class:`NoiseEstimator` before calibration."""
    settings = dict(settings)
    est = noise_estimator(basis, mechanism, settings, standin=standin, public_split=public_split)
    return build_curve(basis, mechanism, standin, [], seeds=0, settings=settings,
                       public_split=public_split, estimates=est.estimates(epsilons))
