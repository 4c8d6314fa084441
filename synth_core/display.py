"""Rich HTML views of a run result, a release report, a schema and a comparison
(what Jupyter shows through ``_repr_html_``).

Every value is HTML-escaped (:func:`esc`) before it enters the markup: column
names, categories and file names come from user data. The views of a result
and of a report show releasable values only; values computed from the private
data without noise (the seed, exact scores, true errors) appear only in
:class:`CuratorView` and :class:`Comparison`, under a CURATOR-ONLY heading.

Standard library only: the objects are read through their attributes and
plain dicts (a report, ``Schema.to_json()``), so this module imports no other
part of synth_core and no third-party package.
"""

from __future__ import annotations

import html
import math
import numbers
import statistics
from typing import Iterable, Sequence

#: the style of every view (one class prefix, nothing global)
STYLE = ("<style>.synth-view{font-family:sans-serif;font-size:13px;max-width:60em}"
         ".synth-view table{border-collapse:collapse;margin:.3em 0 .8em}"
         ".synth-view th,.synth-view td{border:1px solid #ddd;padding:2px 8px;text-align:left}"
         ".synth-view th{background:#f4f4f4}"
         ".synth-view .statement{border-left:4px solid #1b9e77;padding:.4em .8em;"
         "background:#f3faf7}"
         ".synth-view .warning{border-left:4px solid #d95f02;padding:.4em .8em;"
         "background:#fdf3ec}"
         ".synth-view .curator{border:2px dashed #d95f02;padding:.4em .8em}</style>")

CURATOR_LABEL = ("CURATOR-ONLY: computed from the private data without noise. "
                 "Look at these values; never publish them.")

#: rows shown of a long table (the ledger, the measurements, the synthetic data)
MAX_ROWS = 20


def esc(value) -> str:
    """``value`` as HTML text: ``str(value)`` with ``& < > " '`` escaped."""
    return html.escape(str(value), quote=True)


def fmt(value) -> str:
    """A cell's text: real numbers to 4 significant digits, None as a dash,
    lists joined with commas, anything else as ``str``; escaped."""
    if value is None:
        return "&ndash;"
    if isinstance(value, bool):
        return esc(value)
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        return esc(f"{float(value):.4g}")
    if isinstance(value, (list, tuple)):
        return esc(", ".join(map(str, value)))
    return esc(value)


def table(columns: Sequence[str], rows: Iterable[Sequence], *, limit: int = MAX_ROWS) -> str:
    """An HTML table of ``rows`` (first ``limit``, with a line saying how many more)."""
    rows = list(rows)
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{fmt(v)}</td>" for v in row) + "</tr>"
                   for row in rows[:limit])
    more = (f"<div>&hellip; {len(rows) - limit:,} more rows</div>"
            if len(rows) > limit else "")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def pairs(items: Sequence[tuple[str, object]]) -> str:
    """A two-column table of (label, value) pairs."""
    body = "".join(f"<tr><th>{esc(k)}</th><td>{fmt(v)}</td></tr>" for k, v in items)
    return f"<table><tbody>{body}</tbody></table>"


def view(title: str, *parts: str) -> str:
    """The parts under an ``<h4>`` title, in one styled block."""
    return f'{STYLE}<div class="synth-view"><h4>{esc(title)}</h4>{"".join(parts)}</div>'


def box(kind: str, text: str) -> str:
    """A highlighted paragraph (``statement``, ``warning`` or ``curator``)."""
    return f'<div class="{kind}">{esc(text)}</div>'


# ---------------------------------------------------------------- report


def report_summary(report: dict) -> list[tuple[str, object]]:
    """The report's headline settings as (label, value) pairs (releasable values)."""
    cfg, priv = report.get("config", {}), report.get("privacy", {})
    pub = report.get("public_information", {})
    return [("mechanism", cfg.get("mechanism")), ("epsilon", priv.get("epsilon")),
            ("delta", priv.get("delta")),
            ("rho spent / total", f"{priv.get('rho_spent', 0):.6g} / {priv.get('rho', 0):.6g}"),
            ("mode", priv.get("mode")), ("neighbours", priv.get("neighbours")),
            ("workload", report.get("workload", {}).get("description")),
            ("measurements", len(report.get("measurements", []))),
            ("synthetic rows", report.get("synthetic", {}).get("rows")),
            ("public rows", pub.get("rows") or "none"),
            ("public columns", pub.get("columns") or "none"),
            ("domain", report.get("domain", {}).get("source"))]


def ledger_table(report: dict) -> str:
    """Every charge of the report's ledger (rho-zCDP)."""
    charges = report.get("ledger", {}).get("charges", [])
    return table(["round", "step", "mechanism", "rho", "detail"],
                 ([c.get("round"), c.get("step"), c.get("mechanism"), c.get("rho"),
                   c.get("detail")] for c in charges))


def measurements_table(report: dict) -> str:
    """The released measurements: marginal, source, noise std, cells."""
    return table(["round", "marginal", "source", "noise std", "cells"],
                 ([m.get("round"), " × ".join(map(str, m.get("clique", []))), m.get("source"),
                   m.get("noise_std"), m.get("cells")] for m in report.get("measurements", [])))


def report_parts(report: dict) -> list[str]:
    """The report's blocks: privacy statement, warnings, settings, ledger, measurements."""
    parts = [box("statement", report.get("privacy", {}).get("statement", ""))]
    domain = report.get("domain", {})
    if domain and not domain.get("protected", True):
        parts.append(box("warning", domain.get("note", "")))
    parts += [box("warning", w) for w in report.get("warnings", [])]
    parts += [pairs(report_summary(report)),
              "<b>Ledger</b> (every privacy charge, rho-zCDP)", ledger_table(report),
              "<b>Measurements</b> (released with their noisy answers)",
              measurements_table(report)]
    return parts


def report_html(report: dict) -> str:
    """A release report as HTML (releasable values only)."""
    return view("Release report", *report_parts(report))


# ---------------------------------------------------------------- schema


def column_domain(column: dict) -> str:
    """A schema column's domain in words: its categories, or bounds and bins."""
    if column.get("kind") == "categorical":
        return ", ".join(map(str, column.get("categories", [])))
    return f"[{column.get('lower')}, {column.get('upper')}] in {column.get('bins')} bins"


def schema_html(schema) -> str:
    """A :class:`~synth_core.schema.Schema` as HTML: one row per column."""
    columns = schema.to_json()["columns"]
    rows = [(c["name"], c["kind"], column_domain(c), c.get("missing", False)) for c in columns]
    return view(f"Schema ({len(columns)} columns, domain source: {schema.source})",
                table(["column", "kind", "domain", "missing values"], rows, limit=200))


# ---------------------------------------------------------------- run result


def frame_table(frame, limit: int = 10) -> str:
    """The first ``limit`` rows of a DataFrame (read through ``columns`` and ``itertuples``)."""
    head = frame.head(limit)
    more = f"<div>{len(frame):,} rows in all</div>" if len(frame) > limit else ""
    return table([str(c) for c in head.columns],
                 (tuple(row) for row in head.itertuples(index=False)), limit=limit) + more


def result_html(result) -> str:
    """A :class:`~synth_core.api.RunResult` as HTML: the release (report and
    the first synthetic rows). Curator-only values: :class:`CuratorView`."""
    return view(f"Run result: {result.config.mechanism} at epsilon {result.config.epsilon:g} "
                f"({len(result.events)} rounds)",
                *report_parts(result.report), "<b>Synthetic data</b> (first rows)",
                frame_table(result.synthetic))


def curator_items(result) -> list[tuple[str, object]]:
    """CURATOR-ONLY values of a run: the seed and its errors against the private data."""
    diag = result.curator_diagnostics()
    return [("seed", result.seed), ("seeded by the user", result.config.seed is not None),
            ("workload error (true)", diag.workload_error),
            ("public rows alone: workload error (true)", result.public_proxy_error())]


class CuratorView:
    """CURATOR-ONLY view of a run: its seed and true errors, labelled as such."""

    def __init__(self, result):
        self.result = result

    def _repr_html_(self) -> str:
        return view("CURATOR-ONLY run diagnostics",
                    f'<div class="curator">{esc(CURATOR_LABEL)}'
                    f'{pairs(curator_items(self.result))}</div>')


# ---------------------------------------------------------------- comparison


def comparison_rows(results) -> list[tuple]:
    """(mechanism, epsilon, mean, sd, runs) of the finished runs of a comparison
    (a DataFrame with ``mechanism``, ``epsilon``, ``status``, ``workload_error``):
    the mean and sample standard deviation over seeds (None for one run: it has
    none; the table shows a dash)."""
    groups: dict[tuple, list[float]] = {}
    for mech, eps, status, err in zip(results["mechanism"], results["epsilon"],
                                      results["status"], results["workload_error"]):
        if status == "finished" and err is not None and not math.isnan(float(err)):
            groups.setdefault((str(mech), float(eps)), []).append(float(err))
    return [(m, e, statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else None, len(v))
            for (m, e), v in sorted(groups.items())]


class Comparison:
    """CURATOR-ONLY: a comparison's results (one row per run, as
    :meth:`~synth_core.experiments.ResultStore.runs` returns them) shown as
    mean workload error per mechanism and epsilon. ``reference``: the public
    rows' own workload error, if known."""

    def __init__(self, results, reference: float | None = None):
        self.results = results
        self.reference = reference

    def rows(self) -> list[tuple]:
        return comparison_rows(self.results)

    def _repr_html_(self) -> str:
        ref = ("" if self.reference is None else
               pairs([("public rows alone: workload error (true)", self.reference)]))
        return view("CURATOR-ONLY comparison: workload error (true) against epsilon",
                    f'<div class="curator">{esc(CURATOR_LABEL)} Every run of a comparison '
                    "spent its own privacy budget."
                    + table(["mechanism", "epsilon", "mean error", "sd", "runs"], self.rows(),
                            limit=500) + ref + "</div>")
