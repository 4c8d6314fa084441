"""HTML views (escaping, curator-only values apart), live progress outside a
kernel, the shared palette and the Altair figures with their export."""

from __future__ import annotations

import io
import json
import statistics
from dataclasses import replace

import pandas as pd
import pytest

from synth_core import Synthesizer, load_sample
from synth_core import charts, palette
from synth_core.display import Comparison, esc, report_html, result_html, schema_html
from synth_core.notebook import LiveProgress, live, progress_fraction, progress_html
from synth_core.schema import Schema

HOSTILE = '<script>alert("x")</script>'
TINY = dict(rounds=3, fit_iters=5, final_fit_iters=10, workload="all-2way")


@pytest.fixture(scope="module")
def hostile_run():
    """A tiny seeded run on a table whose column name and categories are markup."""
    sample = load_sample("titanic")
    rename = {"sex": HOSTILE}
    private, public = sample.private.rename(columns=rename), sample.public.rename(columns=rename)
    for frame in (private, public):
        frame["pclass"] = frame["pclass"].replace({"1st": "<b>1st</b>"})
    spec = json.loads(json.dumps(sample.schema.to_json()).replace('"sex"', json.dumps(HOSTILE))
                      .replace('"1st"', '"<b>1st</b>"'))
    schema = Schema.from_json(spec)
    return Synthesizer("jam-pgm", epsilon=1.0, seed=123_456_789, **TINY).fit(
        private, public, schema=schema)


def test_every_user_value_is_escaped(hostile_run):
    for html in (result_html(hostile_run), report_html(hostile_run.report),
                 schema_html(hostile_run.inputs.schema), hostile_run._repr_html_(),
                 hostile_run.report._repr_html_(), hostile_run.inputs.schema._repr_html_(),
                 hostile_run.curator_view()._repr_html_()):
        assert "<script>" not in html and "<b>1st" not in html
    assert esc(HOSTILE) in schema_html(hostile_run.inputs.schema)
    assert "&lt;b&gt;1st&lt;/b&gt;" in schema_html(hostile_run.inputs.schema)


def test_release_views_hold_no_curator_value(hostile_run):
    diag = hostile_run.curator_diagnostics()
    for html in (result_html(hostile_run), report_html(hostile_run.report)):
        assert "123456789" not in html and "CURATOR-ONLY" not in html
        assert f"{diag.workload_error:.4g}" not in html
        assert esc(hostile_run.report["privacy"]["statement"]) in html
        assert html.count("<td>select</td>") == sum(
            c["step"] == "select" for c in hostile_run.report["ledger"]["charges"])
    curator = hostile_run.curator_view()._repr_html_()
    assert "CURATOR-ONLY" in curator and "123456789" in curator
    assert f"{diag.workload_error:.4g}" in curator


def test_the_printed_forms_hold_no_curator_value(hostile_run):
    """``print(result)``, a notebook's saved text/plain copy of ``result`` and of an
    event: no seed, no exact score, no private code."""
    text = repr(hostile_run)
    assert str(hostile_run) == text and len(text) < 1000
    assert "123456789" not in text and "seed" not in text and "inputs" not in text
    assert text.startswith("RunResult(mechanism='jam-pgm', epsilon=1, ")
    for event in hostile_run.events:
        assert event.curator is None or "scores" not in repr(event)
        assert "curator" not in repr(event)
    assert any(e.curator is not None for e in hostile_run.events)   # there were scores to hide


def test_comparison_view_is_curator_only_with_mean_and_sd():
    results = pd.DataFrame({
        "mechanism": ["aim", "aim", "aim", "<i>x</i>"], "epsilon": [1.0, 1.0, 3.0, 1.0],
        "status": ["finished", "finished", "finished", "failed"],
        "workload_error": [0.2, 0.4, 0.1, None]})
    view = Comparison(results, reference=0.3)
    assert view.rows() == [("aim", 1.0, pytest.approx(0.3), pytest.approx(
        statistics.stdev([0.2, 0.4])), 2), ("aim", 3.0, 0.1, None, 1)]
    html = view._repr_html_()
    assert "CURATOR-ONLY" in html and "<i>x</i>" not in html
    assert "<td>0.1</td><td>&ndash;</td><td>1</td>" in html   # one run has no spread


def test_live_progress_prints_a_line_per_round_outside_a_kernel(hostile_run):
    out = io.StringIO()
    events = hostile_run.events
    assert list(live(iter(events), out=out, kernel=False)) == events
    lines = out.getvalue().splitlines()
    assert len(lines) == len(events)
    assert lines[-1].startswith(f"round {events[-1].round} of 3:")
    assert progress_fraction(events[-1]) == 1.0
    hostile = replace(events[-1], cliques=((HOSTILE, "age"),))
    assert esc(HOSTILE) in progress_html(hostile) and "<script>" not in progress_html(hostile)


def test_live_progress_without_ipython_is_the_terminal_fallback(hostile_run):
    progress = LiveProgress(out=io.StringIO())
    assert progress.kernel is False and progress.chart is False


def test_plotly_charts_and_altair_figures_share_the_palette(hostile_run):
    assert charts.PUBLIC_COLOR == palette.PUBLIC_COLOR
    assert charts.mechanism_color is palette.mechanism_color
    fig = charts.rounds_figure(hostile_run.events)
    plotly_colours = {t.marker.color for t in fig.data}
    assert plotly_colours <= set(palette.SOURCE_COLORS.values())
    pytest.importorskip("altair")
    from synth_core.notebook import error_chart, rounds_chart

    legend = rounds_chart(hostile_run.events).to_dict()["layer"][0]["encoding"]["color"]["scale"]
    assert set(legend["domain"]) == {e.source if e.source in palette.SOURCE_COLORS else "other"
                                     for e in hostile_run.events}   # no source it does not show
    for source, colour in zip(legend["domain"], legend["range"]):
        assert colour == palette.SOURCE_COLORS.get(source, palette.MIXED_COLOR)
    records = [{"epsilon": e, "mechanism": m, "error": 0.1}
               for e in (0.1, 1.0) for m in ("public-only", "jam-pgm", "aim")]
    scale = error_chart(records).to_dict()["layer"][0]["encoding"]["color"]["scale"]
    assert scale == {"domain": ["aim", "jam-pgm", "public-only"],
                     "range": [palette.mechanism_color(n, ["aim", "jam-pgm", "public-only"])
                               for n in ["aim", "jam-pgm", "public-only"]]}
    assert scale["range"][2] == palette.PUBLIC_COLOR
    # readable labels keep their mechanisms' colours; seeds give a min-max bar
    labels = {"with public rows": "jam-pgm", "private only": "mwem-pgm",
              "public rows alone": "public-only"}
    records = [{"epsilon": e, "setup": label, "error": 0.1 + seed / 10}
               for e in (0.1, 1.0) for label in labels for seed in (0, 1)]
    spec = error_chart(records, color="setup", mechanisms=labels).to_dict()
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    colour = dict(zip(scale["domain"], scale["range"]))
    assert colour["public rows alone"] == palette.PUBLIC_COLOR
    assert colour["with public rows"] == palette.mechanism_color(
        "jam-pgm", ["jam-pgm", "mwem-pgm", "public-only"])
    (rule,) = [layer for layer in spec["layer"] if layer["mark"]["type"] == "rule"]
    assert rule["encoding"]["y"]["field"] == "error" and rule["encoding"]["y"]["aggregate"] == "min"
    assert "curator-only" in spec["layer"][0]["encoding"]["y"]["title"]


def test_figures_export_as_png_and_svg_without_a_browser(tmp_path, hostile_run):
    pytest.importorskip("vl_convert")
    from synth_core.errors import ConfigError
    from synth_core.notebook import rounds_chart, save_figure

    chart = rounds_chart(hostile_run.events)
    save_figure(chart, tmp_path / "r.png")
    save_figure(chart, tmp_path / "r.svg")
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (tmp_path / "r.svg").read_text()
    with pytest.raises(ConfigError, match=".png or .svg"):
        save_figure(chart, tmp_path / "r.pdf")
