"""Jupyter as a front end: live run progress, Altair figures, and a generated
notebook that repeats a run.

Live progress (:func:`live`): wrap the round events of ``Synthesizer.run``; in
a Jupyter kernel a progress bar and a chart of the budget spent per round are
shown once and updated in place (``IPython.display`` with a ``display_id``,
no widgets), so the cell's output grows by nothing while the run goes on;
outside a kernel each round prints one line.

Figures (:func:`error_chart`, :func:`rounds_chart`, :func:`whatif_chart`)
are Altair charts in the colours of :mod:`synth_core.palette` (the app's
Plotly charts use the same); :func:`save_figure` writes PNG or SVG through
vl-convert (no browser). Altair and vl-convert are the ``[notebook]`` extra,
imported when a figure is made.

The repeat notebook (:class:`RunRecipe`, :func:`recipe_notebook`) holds the
run's settings, the names of its input files and its measurement plan (which
marginal each round measured, from which source: all in the release report),
never a data value. Every value enters the code as a Python literal
(:func:`literal`: ``repr`` of plain values, checked to read back equal), so a
column or file name cannot become code. The seed, which regenerates a
research-mode run's noise, is never in the notebook: the curator keeps it in
a separate file (:func:`curator_seed_bytes`) that the notebook reads when it
is present. The notebook is nbformat 4 JSON written with the standard
library, so a plain ``pip install -e .`` can make it.
"""

from __future__ import annotations

import ast
import json
import math
import sys
import time
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Sequence

from .display import esc
from .errors import ConfigError
from .palette import (PUBLIC_COLOR, SOURCE_COLORS, TOTAL_COLOR, MIXED_COLOR,
                      mechanism_color, mechanism_scale)

# ---------------------------------------------------------------- live progress


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (IPython already imported, with a kernel)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def progress_fraction(event) -> float | None:
    """The share of the planned rounds done after ``event`` (None when the
    mechanism adapts its rounds): ``round / rounds_planned``, at most 1."""
    if not event.rounds_planned:
        return None
    return min(1.0, event.round / event.rounds_planned)


def progress_text(event) -> str:
    """One line on a round: round r of R, the marginal, its source, rho spent of total."""
    what = ", ".join(" × ".join(c) for c in event.cliques) if event.cliques else "-"
    of = f" of {event.rounds_planned}" if event.rounds_planned else ""
    return (f"round {event.round}{of}: {what} ({event.source}); "
            f"rho spent {event.rho_spent:.4g} of {event.rho_total:.4g}")


def progress_html(event) -> str:
    """A progress bar (rounds done of planned, else the budget spent) and the
    round's line, escaped."""
    share = progress_fraction(event)
    if share is None:
        share = event.rho_spent / event.rho_total if event.rho_total else 0.0
    width = f"{100 * share:.1f}%"
    return (f'<div style="font-family:sans-serif;font-size:13px">'
            f'<div style="background:#eee;width:30em;height:12px">'
            f'<div style="background:{PUBLIC_COLOR};width:{width};height:12px"></div></div>'
            f"{esc(progress_text(event))}</div>")


class LiveProgress:
    """Progress of a run from its round events: in a kernel a bar and a chart
    updated in place (``display_id``); elsewhere one printed line per round.
    ``chart=False`` (or no Altair) shows the bar only. The chart is redrawn at
    most every ``every`` seconds, and once at the end."""

    def __init__(self, *, chart: bool = True, every: float = 0.5, out=None,
                 kernel: bool | None = None):
        self.kernel = in_kernel() if kernel is None else kernel
        self.chart = chart and self.kernel and _altair_available()
        self.every = every
        self.out = out or sys.stdout
        self.events: list = []
        self._bar = self._plot = None
        self._drawn = 0.0

    def update(self, event) -> None:
        self.events.append(event)
        if not self.kernel:
            print(progress_text(event), file=self.out, flush=True)
            return
        from IPython.display import HTML, display
        if self._bar is None:
            self._bar = display(HTML(progress_html(event)), display_id=True)
        else:
            self._bar.update(HTML(progress_html(event)))
        if self.chart and time.monotonic() - self._drawn >= self.every:
            self._draw()

    def _draw(self) -> None:
        from IPython.display import display
        chart = rounds_chart(self.events)
        if self._plot is None:
            self._plot = display(chart, display_id=True)
        else:
            self._plot.update(chart)
        self._drawn = time.monotonic()

    def finish(self) -> None:
        """The last redraw (the chart with every round)."""
        if self.chart and self.events:
            self._draw()


def live(events: Iterable, **options) -> Iterator:
    """``events`` (a run's round events) passed through unchanged while a
    :class:`LiveProgress` (``options``) shows them::

        for event in live(synth.run(data, public, schema=schema)):
            pass
    """
    progress = LiveProgress(**options)
    for event in events:
        progress.update(event)
        yield event
    progress.finish()


def run_live(synth, data, public=None, **run_kwargs):
    """Run ``synth`` (a :class:`~synth_core.api.Synthesizer`) to the end with
    live progress; return its :class:`~synth_core.api.RunResult`."""
    for _ in live(synth.run(data, public, **run_kwargs)):
        pass
    return synth.result


# ---------------------------------------------------------------- figures


def _altair_available() -> bool:
    from .runtime import installed
    return installed("altair")


def require(module: str, what: str) -> None:
    """ConfigError naming the ``[notebook]`` extra unless ``module`` can be imported."""
    from .runtime import installed
    if not installed(module):
        raise ConfigError(f"{what} needs {module}, which is not installed.",
                          hint='Install the [notebook] extra: pip install -e ".[notebook]"')


def _altair():
    require("altair", "Altair figures")
    import altair as alt
    return alt


def rounds_frame(events: Sequence) -> list[dict]:
    """One record per round: round, marginal, source, rho spent in the round."""
    return [{"round": e.round, "source": e.source, "rho": e.rho_select + e.rho_measure,
             "marginal": ", ".join(" × ".join(c) for c in e.cliques) if e.cliques else "-"}
            for e in events]


def source_scale(alt, present: Iterable[str] | None = None):
    """Altair's colour scale of the measurement sources (the palette's colours),
    over the sources in ``present`` only when given (the legend lists no source
    the chart does not show)."""
    colours = {**SOURCE_COLORS, "other": MIXED_COLOR}
    shown = [s for s in colours if present is None or s in set(present)]
    return alt.Scale(domain=shown, range=[colours[s] for s in shown])


def rounds_chart(events: Sequence):
    """Bars of the rho each round spent, coloured by the source of its
    measurement, with the total budget as a dashed rule. ``events``: a run's
    round events (``result.events``)."""
    if not isinstance(events, Sequence):
        raise ConfigError(f"rounds_chart takes a run's round events, not a "
                          f"{type(events).__name__}.", hint="Pass result.events.")
    alt = _altair()
    records = [{**r, "source": r["source"] if r["source"] in SOURCE_COLORS else "other"}
               for r in rounds_frame(events)]
    data = alt.Data(values=records)
    bars = alt.Chart(data).mark_bar().encode(
        x=alt.X("round:O", title="round"), y=alt.Y("rho:Q", title="rho spent in the round"),
        color=alt.Color("source:N", scale=source_scale(alt, [r["source"] for r in records]),
                        title="source"),
        tooltip=["round:O", "marginal:N", "source:N", alt.Tooltip("rho:Q", format=".3g")])
    chart = bars.properties(width=420, height=180, title="Privacy budget spent per round")
    if events:
        total = alt.Chart(alt.Data(values=[{"total": events[-1].rho_total}])).mark_rule(
            color=TOTAL_COLOR, strokeDash=[4, 4]).encode(y="total:Q")
        chart = alt.layer(bars, total).properties(
            width=420, height=180, title=f"Budget spent per round (dashed: total rho "
                                         f"{events[-1].rho_total:.3g}, cumulative "
                                         f"{events[-1].rho_spent:.3g})")
    return chart


def _records(records, keys: Sequence[str]) -> list[dict]:
    """``records`` as a list of dicts (a DataFrame's rows too), each holding ``keys``
    (ConfigError naming a missing one and those there are)."""
    import pandas as pd
    if isinstance(records, pd.DataFrame):
        records = records.to_dict("records")
    records = list(records)
    for key in keys:
        if any(key not in r for r in records):
            there = sorted({k for r in records for k in r})
            raise ConfigError(f"the records have no '{key}' to plot.",
                              hint=f"Name one of their keys: {', '.join(map(str, there))}.")
    return records


def error_chart(records: Sequence[dict], *, x: str = "epsilon", y: str = "error",
                color: str = "mechanism", title: str = "Workload error against epsilon",
                y_title: str = "workload error (curator-only)",
                mechanisms: Mapping[str, str] | None = None):
    """Lines and points of ``y`` against ``x`` (log scale), one colour per
    ``color`` value, with a bar from the smallest to the largest value where a
    point averages several (seeds). ``records``: dicts, or a DataFrame; rows
    with the same x and colour are averaged.

    Colours are the palette's mechanism colours (:func:`mechanism_scale`), of
    the ``color`` values themselves or, when ``mechanisms`` maps each value (a
    label such as "with public rows") to its mechanism, of those mechanisms: the
    public-only baseline then keeps the public colour whatever its label. The
    default axis title says what a true error is: curator-only."""
    alt = _altair()
    records = _records(records, (x, y, color))
    values = sorted({str(r[color]) for r in records})
    if mechanisms is None:
        domain, colours = mechanism_scale(values)
    else:
        names = sorted({mechanisms[v] for v in values})
        domain, colours = values, [mechanism_color(mechanisms[v], names) for v in values]
    data = alt.Data(values=[{x: float(r[x]), y: float(r[y]), color: str(r[color])}
                            for r in records])
    base = alt.Chart(data).encode(
        x=alt.X(f"{x}:Q", scale=alt.Scale(type="log"), title=f"{x} (log scale)"),
        color=alt.Color(f"{color}:N", scale=alt.Scale(domain=domain, range=colours)))
    mean = base.encode(y=alt.Y(f"mean({y}):Q", title=y_title))
    spread = base.mark_rule().encode(y=f"min({y}):Q", y2=f"max({y}):Q")
    return (mean.mark_line() + mean.mark_point(filled=True, size=60) + spread).properties(
        width=420, height=260, title=title)


def whatif_chart(curves: Sequence):
    """What-if curves (:class:`~synth_core.whatif.WhatIfCurve`): predicted
    error against epsilon per mechanism; measured points filled, estimates hollow."""
    alt = _altair()
    records = [{"epsilon": p.epsilon, "error": p.mean, "mechanism": c.mechanism, "kind": p.kind}
               for c in curves for p in c.points]
    domain, colours = mechanism_scale([r["mechanism"] for r in records])
    base = alt.Chart(alt.Data(values=records)).encode(
        x=alt.X("epsilon:Q", scale=alt.Scale(type="log"), title="epsilon (log scale)"),
        y=alt.Y("error:Q", title="predicted workload error"),
        color=alt.Color("mechanism:N", scale=alt.Scale(domain=domain, range=colours)))
    measured = base.transform_filter("datum.kind == 'measured'").mark_point(
        shape="diamond", filled=True, size=90)
    estimates = base.transform_filter("datum.kind == 'estimate'").mark_point(
        shape="circle", filled=False, size=70, strokeWidth=2)
    return (base.mark_line(strokeDash=[2, 3]) + measured + estimates).properties(
        width=420, height=260, title=alt.TitleParams(
            "What-if: predicted error (no budget spent)",
            subtitle="filled diamonds: measured by stand-in runs; hollow circles: estimates"))


def save_figure(chart, path, *, scale: float = 2.0) -> None:
    """Write an Altair chart as PNG or SVG (by the suffix of ``path``) through
    vl-convert, which draws without a browser."""
    from pathlib import Path

    from .errors import ConfigError
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".png", ".svg"):
        raise ConfigError(f"Cannot write a figure as '{path.name}'.",
                          hint="Give a file name ending in .png or .svg.")
    require("vl_convert", "Figure export")
    import vl_convert as vlc
    spec = chart.to_dict()
    data = (vlc.vegalite_to_png(spec, scale=scale) if suffix == ".png"
            else vlc.vegalite_to_svg(spec).encode("utf-8"))
    path.write_bytes(data)


# ---------------------------------------------------------------- the repeat notebook


def literal(value) -> str:
    """``value`` as Python source that reads back equal (``ast.literal_eval``):
    None, bools, ints, finite floats, strings, and lists, tuples and dicts of
    them. Anything else raises TypeError: no value is pasted as code."""
    def check(v):
        if v is None or isinstance(v, (bool, int, str)):
            return
        if isinstance(v, float):
            if not math.isfinite(v):
                raise TypeError(f"{v!r} has no literal form")
            return
        if isinstance(v, (list, tuple)):
            for item in v:
                check(item)
            return
        if isinstance(v, dict):
            for k, item in v.items():
                check(k)
                check(item)
            return
        raise TypeError(f"{type(v).__name__} values have no literal form here")

    check(value)
    text = repr(value)
    if ast.literal_eval(text) != value:
        raise TypeError(f"{value!r} does not read back equal")
    return text


@dataclass(frozen=True)
class RunRecipe:
    """What a repeat notebook needs: the run's settings without the seed
    (``config``: :meth:`RunConfig.to_json` without ``seed``) and where its
    inputs come from (names of files, never their contents), as the ``synth
    run`` command of :mod:`synth_core.workbench.command` names them."""

    config: dict
    sample: str | None = None
    data: str | None = None
    backend: str = "memory"
    public: str | None = None
    public_flag: str | None = None
    no_public: bool = False
    public_columns: tuple[str, ...] = ()
    schema: str | None = None
    budget_file: str | None = None
    #: columns of the private table the run left out on request (``--drop``)
    drop_columns: tuple[str, ...] = ()
    #: the run's measurement plan: [round, marginal columns, source] per measurement
    plan: tuple = ()
    #: the notes of the reproduce command (files to provide, what cannot be repeated)
    notes: tuple[str, ...] = ()
    #: the run was seeded (an exact repeat needs the curator's seed file)
    seeded: bool = False
    curator_file: str = "curator-seed.json"

    def __post_init__(self):
        if "seed" in self.config:
            raise ValueError("A recipe never carries the seed (it goes to the curator's file).")


def plan_of(report: dict) -> list[list]:
    """A report's measurement plan: ``[round, [columns...], source]`` per measurement."""
    return [[m["round"], list(m["clique"]), m["source"]] for m in report["measurements"]]


INTRO = """# Repeat a synth run

This notebook repeats a run of the synth workbench through the Python API: the
same mechanism, budget, workload and settings on the same inputs. It holds no
private data: only the settings, the names of the input files (put them beside
this notebook) and the run's measurement plan (which marginal each round
measured, as the release report lists it).

A release-mode run draws fresh noise, so a repeat makes different random
choices with the same guarantee for itself. But a repeat that reads the
private table (every mechanism but the public-only baseline) spends the
table's budget again: every run on a table counts, and a release chosen among
repeats is covered only by all of them together (docs/trust.md). Run the cells
in order."""

CURATOR_MD = """## Curator only: the seed

A seeded (research-mode) run repeats exactly only with its seed, and the seed
regenerates its noise: whoever has it can remove the noise. So the seed is
never in this notebook. The curator keeps it in a separate file (its name is
below); when that file is beside the notebook the next cell reads it, and the
run repeats exactly. Never publish that file."""

SEEDED_MD = """

This run was seeded: without the curator's file the repeat is a new run (with
the same settings), not the same one."""

UNSEEDED_MD = """

This run was not seeded (release mode): it has no seed to keep, so the next
cell finds none and the repeat is a new run with the same settings."""

LOAD_MD = """## The inputs

The names below are exactly those of the run; nothing of the data is in this
notebook. The code mirrors `synth run`: a bundled sample brings its public rows
and schema unless others are named."""

RUN_MD = """## Run, with live progress

A bar and a chart of the budget spent per round update in place while the
mechanism runs."""

CHECK_MD = """## The release and the measurement plan

The report shows the privacy statement and the ledger. The last cell compares
the measurement plan of this run with the original one: equal for an exact
repeat (a seeded run with its curator file); a fresh release-mode run may
choose other marginals."""

SETTINGS_CODE = """from synth_core.api import RunConfig, Synthesizer

CONFIG = {config}
SAMPLE = {sample}
DATA = {data}
BACKEND = {backend}
PUBLIC = {public}
PUBLIC_FLAG = {public_flag}
NO_PUBLIC = {no_public}
PUBLIC_COLUMNS = {public_columns}
SCHEMA = {schema}
DROP_COLUMNS = {drop_columns}
BUDGET_FILE = {budget_file}
ORIGINAL_PLAN = {plan}"""

NOTES_CODE = """NOTES = {notes}
for note in NOTES:
    print(note)"""

CURATOR_CODE = """import json
from pathlib import Path

CURATOR_FILE = Path({curator_file})
SEED = json.loads(CURATOR_FILE.read_text(encoding="utf-8"))["seed"] if CURATOR_FILE.exists() else None
print("seeded repeat (curator file found)" if SEED is not None else "no seed: a new run with the same settings")"""

LOAD_CODE = """from synth_core.api import load_sample
from synth_core.schema import load_schema

public = schema = public_name = data_name = None
if SAMPLE is not None:
    sample = load_sample(SAMPLE)
    data, schema, data_name = sample.private, sample.schema, SAMPLE + ":private"
    if BACKEND != "memory":      # count the sample's file where it lies, as `synth run` does
        from synth_core.api import SAMPLE_DIR, sample_preset
        data, data_name = str(SAMPLE_DIR / sample_preset(SAMPLE)["private"]), None
    if not (PUBLIC_FLAG or NO_PUBLIC):
        public, public_name = sample.public, sample.public_name
else:
    data = DATA
if PUBLIC is not None:
    public, public_name = PUBLIC, None
if NO_PUBLIC:
    public = None
if SCHEMA is not None:
    schema = load_schema(SCHEMA)
# the table's budget account: BUDGET_FILE, else the one the workbench keeps for this table
# (found by the table's content in $SYNTH_WORKBENCH_OUT/budgets, default out/budgets)
from synth_core.budget import table_label
from synth_core.tables import load_table
from synth_core.workbench.budget import run_account
if BACKEND == "memory" and isinstance(data, str):
    data = load_table(data)
budget = run_account(data, budget_file=BUDGET_FILE, label=table_label(DATA, SAMPLE),
                     default_delta=CONFIG["delta"])
# the label only: the account's file is named by the table's fingerprint, a function of the
# private data, and a saved notebook keeps what this cell prints
print(f"charged to the table's budget account {budget.label!r}" if budget is not None
      else "no budget account for this table here: the run is capped by its own epsilon only")"""

RUN_CODE = """from synth_core.notebook import live

synth = Synthesizer.from_config(RunConfig(**{**CONFIG, "seed": SEED}))
for event in live(synth.run(data, public, schema=schema, public_flag=PUBLIC_FLAG,
                            public_columns=PUBLIC_COLUMNS, data_name=data_name,
                            public_name=public_name, backend=BACKEND, budget=budget,
                            drop_columns=DROP_COLUMNS)):
    pass
result = synth.result
result"""

CHECK_CODE = """from synth_core.notebook import plan_of

result.write("synthetic.csv", "report.json")
result.report"""

PLAN_CODE = """SAME_PLAN = plan_of(result.report) == ORIGINAL_PLAN
print("same measurement plan as the original run:", SAME_PLAN)"""


def _cell(kind: str, source: str) -> dict:
    cell = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def recipe_cells(recipe: RunRecipe) -> list[dict]:
    """The notebook's cells: fixed prose and code, the recipe's values as literals."""
    values = {"config": literal(recipe.config), "sample": literal(recipe.sample),
              "data": literal(recipe.data), "backend": literal(recipe.backend),
              "public": literal(recipe.public), "public_flag": literal(recipe.public_flag),
              "no_public": literal(bool(recipe.no_public)),
              "public_columns": literal(list(recipe.public_columns)),
              "schema": literal(recipe.schema), "budget_file": literal(recipe.budget_file),
              "drop_columns": literal(list(recipe.drop_columns)),
              "plan": literal([[r, list(c), src] for r, c, src in recipe.plan])}
    cells = [_cell("markdown", INTRO)]
    if recipe.notes:
        cells.append(_cell("code", NOTES_CODE.format(notes=literal(list(recipe.notes)))))
    cells += [_cell("markdown", "## Settings (no seed)"),
              _cell("code", SETTINGS_CODE.format(**values)),
              _cell("markdown", CURATOR_MD + (SEEDED_MD if recipe.seeded else UNSEEDED_MD)),
              _cell("code", CURATOR_CODE.format(curator_file=literal(recipe.curator_file))),
              _cell("markdown", LOAD_MD), _cell("code", LOAD_CODE),
              _cell("markdown", RUN_MD), _cell("code", RUN_CODE),
              _cell("markdown", CHECK_MD), _cell("code", CHECK_CODE), _cell("code", PLAN_CODE)]
    return cells


def recipe_notebook(recipe: RunRecipe) -> dict:
    """The repeat notebook as an nbformat 4 document (a dict)."""
    return {"nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                        "language": "python"},
                         "language_info": {"name": "python"}},
            "cells": [{**c, "id": f"cell-{i}"} for i, c in enumerate(recipe_cells(recipe))]}


def notebook_bytes(recipe: RunRecipe) -> bytes:
    """The repeat notebook as the bytes of an ``.ipynb`` file."""
    return (json.dumps(recipe_notebook(recipe), indent=1, ensure_ascii=False) + "\n").encode()


def curator_seed_bytes(seed: int) -> bytes:
    """CURATOR-ONLY: the seed file a repeat notebook reads for an exact repeat."""
    return (json.dumps({"seed": int(seed), "note": "CURATOR-ONLY: this seed regenerates the "
                        "run's noise. Never publish it."}, indent=1) + "\n").encode()


def result_recipe(result, *, sample: str | None = None, data: str | None = None,
                  public: str | None = None, public_flag: str | None = None,
                  schema: str | None = None, backend: str | None = None,
                  curator_file: str = "curator-seed.json") -> RunRecipe:
    """The recipe of a finished :class:`~synth_core.api.RunResult`: its settings
    (without the seed), the public columns it used, its measurement plan, and
    the inputs as the caller names them (a bundled ``sample``, or file names)."""
    from .errors import ConfigError
    if (sample is None) == (data is None):
        raise ConfigError("Name the run's private table: give exactly one of sample=NAME "
                          "or data=FILE.", hint="e.g. result.to_notebook('repeat.ipynb', "
                          "sample='titanic'); the notebook holds the name, not the data.")
    config = result.config.to_json()
    seed = config.pop("seed")
    options = dict(config["options"])
    columns = tuple(options.pop("public_columns", ()) or result.inputs.public.columns)
    config["options"] = options
    rows_used = result.report["public_information"]["rows"] is not None
    return RunRecipe(config, sample=sample, data=data,
                     backend=backend or result.inputs.backend, public=public,
                     public_flag=public_flag,
                     no_public=sample is not None and not rows_used and public_flag is None,
                     public_columns=columns, schema=schema, plan=tuple(plan_of(result.report)),
                     drop_columns=tuple(result.inputs.dropped),
                     seeded=seed is not None, curator_file=curator_file)
