"""Real, public and synthetic distributions of one marginal, side by side.

A marginal ``M_r(X)`` (the counts of every combination of the values of the
columns ``r``) is shown as shares ``M_r(X) / |X|``, one series per table:

* ``real``: the private table. CURATOR-ONLY: exact, without noise; never in a
  release (``run_tables(result, real=False)`` leaves it out, and
  :func:`check_no_real` refuses a view that carries it);
* ``public``: the public rows, when the run had them;
* ``synthetic``: the released synthetic records.

The error scale. The workload error averages, over the marginals ``r``, the
L1 distance ``||p - q||_1 = sum_cells |p_cell - q_cell|`` of two share
vectors ``p`` (real) and ``q`` (synthetic). It lies between 0 (identical) and
2 (no cell in common). Since both sum to one, the cells where ``q`` has too
much hold exactly ``||p - q||_1 / 2`` more mass than ``p`` there (the total
variation distance): an L1 error of 0.3 means 15% of the probability mass
sits in the wrong cells. :func:`error_scale` computes this for one marginal,
with the cells that contribute most.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: how to read a workload error, for the charts that show one (what-if, Compare)
WORKLOAD_ERROR_SCALE = ("Workload error: the mean, over the workload's marginals, of the L1 "
                        "distance between the real and the synthetic cell shares. It runs from "
                        "0 (identical) to 2 (no cell in common), and half of it is the share of "
                        "the probability mass in the wrong cells: 0.3 means 15%.")
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .errors import ConfigError
from .schema import Schema

Clique = tuple[str, ...]

REAL, PUBLIC, SYNTHETIC = "real", "public", "synthetic"
#: series order and colours of the chart
COLOURS = {REAL: "#555555", PUBLIC: "#1b9e77", SYNTHETIC: "#d95f02"}
#: the most cells the chart draws (the cells with the largest shares in any series)
MAX_CELLS = 40


def shares(counts: np.ndarray) -> np.ndarray:
    """Counts scaled to sum one (all zeros stay zero)."""
    counts = np.asarray(counts, dtype=float)
    total = counts.sum()
    return counts / total if total > 0 else counts


def cell_labels(schema: Schema, clique: Sequence[str]) -> list[str]:
    """Labels of the cells of ``clique`` in the marginal's C order, ``a=x, b=y``."""
    labels = [[f"{c}={v}" for v in schema.column(c).labels()] for c in clique]
    out = [""]
    for column in labels:
        out = [f"{head}, {lab}" if head else lab for head in out for lab in column]
    return out


def marginal_choices(schema: Schema, workload_cliques: Sequence[Sequence[str]]) -> list[Clique]:
    """What the side-by-side view offers: every column, then every workload marginal."""
    singles = [(c,) for c in schema.names]
    rest = [tuple(cl) for cl in workload_cliques if len(cl) > 1]
    return singles + list(dict.fromkeys(rest))


def marginal_frame(schema: Schema, clique: Sequence[str], tables: Mapping[str, object],
                   max_cells: int = MAX_CELLS) -> pd.DataFrame:
    """Long frame ``cell, table, share, count`` of ``clique`` for each table given.

    ``tables`` maps :data:`REAL` / :data:`PUBLIC` / :data:`SYNTHETIC` to any
    counter with ``marginal(clique)`` (a ``CodedTable``, a DuckDB backend);
    ``None`` entries are left out. At most ``max_cells`` cells are kept: those
    with the largest share in any table; ``attrs`` keeps every cell's shares
    (``full``, for :func:`error_scale`) and labels. Built from a real table it
    is CURATOR-ONLY and never serialised.
    """
    clique = tuple(clique)
    unknown = [c for c in clique if c not in schema.names]
    if unknown:
        raise ConfigError(f"No column {unknown[0]!r} in this run's schema.",
                          hint=f"Columns: {', '.join(schema.names)}.")
    counts = {name: np.asarray(t.marginal(clique), dtype=float)
              for name, t in tables.items() if t is not None}
    labels = cell_labels(schema, clique)
    share = {name: shares(c) for name, c in counts.items()}
    top = np.max(np.vstack(list(share.values())), axis=0)
    keep = np.sort(np.argsort(-top, kind="stable")[:max_cells])
    rows = [{"cell": labels[i], "table": name, "share": float(share[name][i]),
             "count": float(counts[name][i])}
            for name in (REAL, PUBLIC, SYNTHETIC) if name in counts for i in keep]
    frame = pd.DataFrame(rows, columns=["cell", "table", "share", "count"])
    frame.attrs.update(clique=clique, cells=len(labels), shown=int(keep.size), labels=labels,
                       full=share)
    return frame


def run_tables(result, *, real: bool = True) -> dict:
    """The tables of a finished run (a ``RunResult``) by side: the private table
    (only when ``real``; CURATOR-ONLY), the public rows when the run had them,
    and the synthetic records."""
    data = result.inputs.data
    tables = {REAL: data.private} if real else {}
    tables[PUBLIC] = data.public
    tables[SYNTHETIC] = result.synthetic_table
    return tables


def check_no_real(frame: pd.DataFrame, what: str = "this view") -> None:
    """ConfigError if a :func:`marginal_frame` carries the real side (before it is shown
    where only releasable values belong)."""
    if (frame["table"] == REAL).any() or REAL in frame.attrs.get("full", {}):
        raise ConfigError(f"Refusing to show {what}: it holds the real distribution.",
                          hint="Build it with run_tables(result, real=False).")


@dataclass(frozen=True)
class ErrorScale:
    """The L1 error of one marginal and what it means on this example.

    ``l1 = sum |p - q|``; ``misplaced = l1 / 2``, the share of the probability
    mass in the wrong cells; ``worst``: (cell, real share, other share) of the
    cells that contribute most.
    """

    clique: Clique
    against: str
    l1: float
    misplaced: float
    worst: tuple[tuple[str, float, float], ...]

    def text(self) -> str:
        what = " × ".join(self.clique)
        lines = [f"An L1 error of {self.l1:.2f} on {what} means {self.misplaced:.1%} of the "
                 f"probability mass is in the wrong cells of the {self.against} data (L1 runs "
                 f"from 0, identical, to 2, no cell in common; the misplaced share is half "
                 f"of it)."]
        if self.worst:
            cells = "; ".join(f"{cell}: {p:.1%} real, {q:.1%} {self.against}"
                              for cell, p, q in self.worst)
            lines.append(f"Largest differences: {cells}.")
        return " ".join(lines)


def error_scale(frame: pd.DataFrame, against: str = SYNTHETIC, worst: int = 3) -> ErrorScale:
    """The :class:`ErrorScale` of ``against`` vs the real side of a :func:`marginal_frame`
    (computed on all of the marginal's cells, not only the ones shown)."""
    real, other = _full_shares(frame, REAL), _full_shares(frame, against)
    diff = np.abs(real - other)
    l1 = float(diff.sum())
    labels = frame.attrs["labels"]
    order = [i for i in np.argsort(-diff, kind="stable")[:worst] if diff[i] > 0]
    return ErrorScale(frame.attrs["clique"], against, l1, l1 / 2.0,
                      tuple((labels[i], float(real[i]), float(other[i])) for i in order))


def _full_shares(frame: pd.DataFrame, table: str) -> np.ndarray:
    full = frame.attrs.get("full", {})
    if table not in full:
        raise ConfigError(f"This view has no {table} side.",
                          hint="Build it with marginal_frame and that table.")
    return full[table]


def figure(frame: pd.DataFrame, title: str = "") -> go.Figure:
    """Grouped bars: one series per table, one group per cell."""
    fig = go.Figure()
    for name in (REAL, PUBLIC, SYNTHETIC):
        part = frame[frame["table"] == name]
        if len(part):
            label = "real (curator-only)" if name == REAL else name
            fig.add_trace(go.Bar(x=part["cell"], y=part["share"], name=label,
                                 marker_color=COLOURS[name],
                                 hovertemplate="%{x}: %{y:.1%}<extra>" + label + "</extra>"))
    shown, cells = frame.attrs.get("shown", 0), frame.attrs.get("cells", 0)
    clique = " × ".join(frame.attrs.get("clique", ()))
    more = f" ({shown} of {cells} cells, the largest)" if shown < cells else ""
    fig.update_layout(barmode="group", title=title or f"{clique}{more}",
                      yaxis=dict(title="share of records", tickformat=".0%"),
                      height=max(320, 260 + 4 * math.ceil(shown / 4)),
                      margin=dict(l=40, r=20, t=50, b=40), legend=dict(orientation="h"))
    return fig
