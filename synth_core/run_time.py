"""The run-time model: how many CPU seconds a run will take, before it starts.

For a run of mechanism ``m`` with ``R`` rounds on a table of ``n`` rows and
``d`` columns whose domain has ``C`` cells in all (the sum of the column
sizes), ``I`` per-round and ``F`` final fit iterations::

    seconds = a_m + b_m * R * (1 + n / 10_000) + s_m * R * W / 10_000
              + c_m * (R * I / (e_m + 1) + F) * R ** e_m * C / 100 * epsilon ** g_m

``a_m`` is the fixed start-up (preparing the inputs, the workload, the
first model), ``b_m`` the per-round cost of measuring on the rows, ``s_m``
the per-round cost of scoring the candidates (``W``: the cells of the
workload's marginals, summed), ``c_m`` the cost of the model fits:
iterations times model size, taken as growing with the rounds done as
``R ** e_m`` and in proportion to the domain (over the rounds it averages
``R ** e_m * C / (e_m + 1)``). The exponent ``e_m`` is chosen per mechanism
among 1, 1.5, 2, 2.5 and 3 (the best fit): the junction tree of a PGM model
grows faster than the number of marginals in it once cliques merge. With
more epsilon a mechanism that makes a fixed number of rounds picks larger
marginals (less noise per cell), so its model grows with epsilon:
``epsilon ** g_m``, ``g_m`` chosen among 0, 0.5, 1, 1.5 and 2 where the
measured runs span several epsilons (else 0). When the
mechanism adapts its number of rounds (``rounds`` is None), ``R`` is
predicted as ``k_m * d ** q_m * epsilon ** p_m`` (fitted on the rounds the
measured runs made).

The constants come from measured runs (``benchmarks/runtime_model.py``,
which writes :data:`CALIBRATION_PATH`; docs/run_time_estimates.md). They
are CPU seconds (user + system, all threads): on an otherwise idle machine
a run's wall time is at most that.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np

from .errors import ConfigError

#: the calibration file (package data), written by benchmarks/runtime_model.py
CALIBRATION_PATH = Path(__file__).with_name("run_time_calibration.json")
#: the model's terms, in the order of the fitted constants (a, b, s, c)
TERMS = ("start", "rounds", "select", "fit")
#: the scales of rows, domain cells and workload cells in the terms
ROW_SCALE = 10_000
CELL_SCALE = 100
WORKLOAD_SCALE = 10_000

#: a variant without its own calibration uses its family's (same algorithm)
FAMILY = {"gem-pub": "gem", "vgem-pub": "gem", "vpmw": "pmw-pub", "vjam-pgm": "jam-pgm",
          "aim+conditional": "aim", "vjam-pgm+conditional": "vjam-pgm"}

_loaded: dict | None = None


def run_features(config, schema, n_rows: int, *, public_rows: int = 0,
                 public_columns: int = 0) -> dict:
    """The quantities the model uses for a run with ``config`` (a RunConfig) on
    a table of ``n_rows`` rows with domain ``schema``."""
    from .mechanisms import MECHANISMS   # the mechanisms' declared defaults
    rounds = None
    if config.mechanism != "public-only":
        rounds = config.mechanism_options().get("rounds")
        if rounds is None:
            default = MECHANISMS[config.mechanism].option_defaults().get("rounds")
            rounds = default if isinstance(default, int) else None
    else:
        rounds = 0
    return {"mechanism": config.mechanism, "conditional": bool(config.options.get("conditional")),
            "epsilon": float(config.epsilon), "rows": int(n_rows),
            "columns": len(schema.names), "cells": int(sum(schema.sizes.values())),
            "workload_cells": workload_cells(config.workload, schema),
            "planned_rounds": rounds, "round_fit_iters": int(config.round_fit_iters),
            "final_fit_iters": int(config.final_fit_iters), "public_rows": int(public_rows),
            "public_columns": int(public_columns)}


def workload_cells(spec: str, schema) -> int:
    """``W``: the cells of the workload's marginals, summed (what scoring every
    candidate once reads)."""
    from .workload import parse_workload
    sizes = schema.sizes
    return int(sum(math.prod(sizes[c] for c in clique)
                   for clique in parse_workload(spec, schema.names).cliques))


def model_key(features: dict) -> str:
    """The calibration entry of a run: its mechanism, ``+conditional`` for the
    conditional variant."""
    return features["mechanism"] + ("+conditional" if features.get("conditional") else "")


def term_values(features: dict, rounds: float, exponent: float = 1.0,
                epsilon_exponent: float = 0.0) -> list[float]:
    """The model's terms (start, rounds, select, fit) of a run making ``rounds``
    rounds, the model size growing as ``rounds ** exponent * epsilon **
    epsilon_exponent``."""
    work = (rounds * features["round_fit_iters"] / (exponent + 1) + features["final_fit_iters"]) \
        * rounds ** exponent * features["cells"] / CELL_SCALE \
        * features["epsilon"] ** epsilon_exponent
    return [1.0, rounds * (1 + features["rows"] / ROW_SCALE),
            rounds * features["workload_cells"] / WORKLOAD_SCALE, work]


def predicted_rounds(features: dict, entry: dict) -> float:
    """``R``: the planned rounds, else ``k * columns ** q * epsilon ** p`` (adaptive)."""
    if features["planned_rounds"] is not None:
        return float(features["planned_rounds"])
    k, q, p = entry.get("rounds_k", 1.0), entry.get("rounds_q", 1.0), entry.get("rounds_p", 0.0)
    return max(1.0, k * features["columns"] ** q * features["epsilon"] ** p)


def estimate_from_features(features: dict, calibration: dict | None = None) -> float:
    """Estimated CPU seconds of a run with these features (ConfigError when the
    mechanism has no calibration)."""
    entry = calibration_entry(features, calibration)
    terms = term_values(features, predicted_rounds(features, entry), entry.get("exponent", 1.0),
                        entry.get("epsilon_exponent", 0.0))
    return float(sum(c * t for c, t in zip(entry["coef"], terms)))


def calibration_entry(features: dict, calibration: dict | None = None) -> dict:
    """The calibrated constants of the run's mechanism (or of its family, see
    :data:`FAMILY`); ConfigError when there are none."""
    models = (calibration or load_calibration())["models"]
    for name in family_chain(model_key(features), features["mechanism"]):
        if name in models:
            return models[name]
    raise ConfigError(f"No run-time calibration for {model_key(features)}.",
                      hint="Run: PYTHONPATH=$PWD python benchmarks/runtime_model.py")


def family_chain(key: str, mechanism: str) -> list[str]:
    """The calibration entries tried for ``key``, in order: its own, its family's
    (:data:`FAMILY`), that family's, ..., then the plain mechanism's."""
    chain = [key]
    while chain[-1] in FAMILY and FAMILY[chain[-1]] not in chain:
        chain.append(FAMILY[chain[-1]])
    return chain + [mechanism]


def load_calibration() -> dict:
    """The calibration file's content (read once)."""
    global _loaded
    if _loaded is None:
        _loaded = json.loads(CALIBRATION_PATH.read_text())
    return _loaded


def write_calibration(calibration: dict, path: Path = CALIBRATION_PATH) -> None:
    global _loaded
    path.write_text(json.dumps(calibration, indent=1, sort_keys=True) + "\n")
    _loaded = None


# ---------------------------------------------------------------- fitting


def nonnegative_fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares of ``x @ coef ~ y`` by trying every subset of
    the columns (few columns: exact), smallest subsets first; a larger subset
    wins only with a clearly smaller residual. When the measurements do not pin
    the constants down (fewer distinct runs than terms) this keeps the fewest
    terms that explain them (one run: the start-up alone) rather than
    extrapolating along a term nothing measured."""
    scale = np.abs(x).max(axis=0)
    scale[scale == 0] = 1.0
    xs = x / scale
    best, best_res = np.zeros(x.shape[1]), math.inf
    for size in range(1, x.shape[1] + 1):
        for cols in itertools.combinations(range(x.shape[1]), size):
            sol = np.linalg.lstsq(xs[:, cols], y, rcond=None)[0]
            if (sol < 0).any():
                continue
            coef = np.zeros(x.shape[1])
            coef[list(cols)] = sol
            res = float(np.sum((xs @ coef - y) ** 2))
            if res < best_res * (1 - 1e-6) - 1e-12:
                best, best_res = coef, res
    return best / scale


def fit_rounds(records: list[dict]) -> dict:
    """``rounds ~ k * columns ** q * epsilon ** p`` by least squares in logs; an
    exponent the records cannot identify (one column count, or one epsilon) is 0."""
    y = np.log([max(1, r["rounds_run"]) for r in records])
    logs = {"q": np.log([r["columns"] for r in records]),
            "p": np.log([r["epsilon"] for r in records])}
    free = [name for name, v in logs.items() if np.ptp(v) > 0]
    x = np.column_stack([np.ones_like(y)] + [logs[name] for name in free])
    sol = np.linalg.lstsq(x, y, rcond=None)[0]
    fitted = {"rounds_k": float(np.exp(sol[0])), "rounds_q": 0.0, "rounds_p": 0.0}
    fitted.update({f"rounds_{name}": float(v) for name, v in zip(free, sol[1:])})
    return fitted


#: the model-size exponents tried (the one with the smallest relative error is kept)
EXPONENTS = (1.0, 1.5, 2.0, 2.5, 3.0)
#: the exponents of epsilon in the model size tried (runs at one epsilon: 0 only)
EPSILON_EXPONENTS = (0.0, 0.5, 1.0, 1.5, 2.0)


def fit_entry(records: list[dict]) -> dict:
    """One mechanism's constants and model-size exponents, minimising the squared
    relative error of the measured CPU seconds (``run_cpu_s``) given the rounds
    the runs made; the smallest exponents win a tie."""
    y = np.array([r["run_cpu_s"] for r in records], float)
    several = len({r["epsilon"] for r in records}) > 1
    best = None
    for exponent, eps_exponent in itertools.product(
            EXPONENTS, EPSILON_EXPONENTS if several else (0.0,)):
        x = np.array([term_values(r, r["rounds_run"], exponent, eps_exponent) for r in records],
                     float)
        coef = nonnegative_fit(x / y[:, None], np.ones_like(y))
        res = float(np.sum((x @ coef / y - 1) ** 2))
        if best is None or res < best[0] * (1 - 1e-3) - 1e-9:
            best = (res, exponent, eps_exponent, coef)
    entry = {"coef": [float(c) for c in best[3]], "exponent": best[1],
             "epsilon_exponent": best[2], "runs": len(records)}
    if any(r["planned_rounds"] is None for r in records):
        entry.update(fit_rounds(records))
    return entry


def at_defaults(record: dict) -> bool:
    """Whether a measured run used the default run settings (what is fitted)."""
    return not record.get("settings")


def family_knows_more(key: str, records: list[dict], groups: dict) -> bool:
    """Whether a variant measured on one table only should use its family's
    constants instead (a mechanism along its :func:`family_chain` was measured
    on more tables)."""
    if len({r["rows"] for r in records}) > 1:
        return False
    return any(len({r["rows"] for r in groups.get(name, ())}) > 1
               for name in family_chain(key, key.partition("+")[0])[1:])


def fit_calibration(records: list[dict]) -> dict:
    """The calibration (one entry per mechanism and variant) of the measured runs
    made at the default run settings (runs with other settings are checked
    against it, not fitted: docs/run_time_estimates.md)."""
    groups: dict[str, list] = {}
    for r in filter(at_defaults, records):
        groups.setdefault(model_key(r), []).append(r)
    groups = {k: v for k, v in groups.items() if not family_knows_more(k, v, groups)}
    return {"model": "seconds = a + b * R * (1 + rows/10000) + s * R * workload_cells/10000 "
                     "+ c * (R * I / (e + 1) + F) * R ** e * cells/100 * epsilon ** g",
            "terms": list(TERMS), "unit": "CPU seconds (user + system) of the run",
            "command": "PYTHONPATH=$PWD nice -n 5 python benchmarks/runtime_model.py",
            "models": {k: fit_entry(v) for k, v in sorted(groups.items())}}
