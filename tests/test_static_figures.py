"""Static benchmark figures in Altair, PNG and SVG through vl-convert (the [notebook]
extra, no browser): the paper reproductions and the cost curves."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import cost_curves  # noqa: E402
import reproduce  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _rows() -> list[dict]:
    rows = []
    for data in ("adult_pub025", "adult_pub100"):
        for mech, base in (("jam-pgm", 0.1), ("public-only", 0.3)):
            for eps in (0.1, 1.0, 10.0):
                mean = base + 0.1 / eps
                rows.append(dict(dataset=data, mechanism=mech, epsilon=eps, mean=mean,
                                 min=mean - 0.01, max=mean + 0.02))
    return rows


def test_reproduce_figure_has_a_panel_per_dataset_and_min_max_bars():
    pytest.importorskip("altair")
    from synth_core.palette import PUBLIC_COLOR

    figure = next(iter(reproduce.FIGURES))
    spec = reproduce.plot_figure(figure, _rows()).to_dict()
    assert spec["facet"]["column"]["field"] == "dataset"
    assert sorted({v["dataset"] for v in spec["data"]["values"]}) == ["adult_pub025",
                                                                      "adult_pub100"]
    lines, bars = spec["spec"]["layer"]
    assert lines["encoding"]["x"]["scale"]["type"] == "log"
    assert lines["encoding"]["y"]["field"] == "mean"
    assert (bars["encoding"]["y"]["field"], bars["encoding"]["y2"]["field"]) == ("min", "max")
    colour = lines["encoding"]["color"]["scale"]
    assert colour["domain"] == ["jam-pgm", "public-only"] and colour["range"][1] == PUBLIC_COLOR
    assert "public-only" in lines["encoding"]["strokeDash"]["condition"]["test"]  # dashed


def test_cost_curve_figure_is_log_log_per_backend():
    pytest.importorskip("altair")
    from synth_core.palette import mechanism_scale

    records = [dict(kind="run", backend=b, rows=r, count_seconds=r / 1e5 * k, peak_rss_mb=300.0,
                    jvm_peak_rss_mb=900.0 if b == "spark" else None)
               for b, k in (("memory", 1.0), ("spark", 0.5)) for r in (1e5, 1e6)]
    records.append(dict(kind="slope", backend="memory"))           # not a point
    spec = cost_curves.plot_figure(records).to_dict()
    time, memory = spec["hconcat"]
    for panel in (time, memory):
        enc = panel["encoding"]
        assert enc["x"]["scale"]["type"] == "log" and enc["y"]["scale"]["type"] == "log"
        assert enc["color"]["scale"] == dict(zip(("domain", "range"),
                                                 mechanism_scale(["memory", "spark"])))
    assert (time["encoding"]["y"]["field"], memory["encoding"]["y"]["field"]) == (
        "count_seconds", "peak_mb")
    values = time["data"]["values"]
    assert [v["count_seconds"] for v in values if v["backend"] == "memory"] == [1.0, 10.0]
    # Spark's memory is its Python process and its JVM together
    assert {v["peak_mb"] for v in values if v["backend"] == "spark"} == {1200.0}
    assert {v["peak_mb"] for v in values if v["backend"] == "memory"} == {300.0}


def test_cost_curves_draw_from_the_committed_runs_without_running(tmp_path):
    pytest.importorskip("vl_convert")
    runs = ROOT / "benchmarks" / "results" / "cost_curves" / "runs.jsonl"
    out = tmp_path / "plot.png"
    assert cost_curves.main(["--from-runs", str(runs), "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC and out.stat().st_size > 5_000
    assert b"<svg" in out.with_suffix(".svg").read_bytes()[:500]
    assert {r["backend"] for r in cost_curves.read_runs(runs)} == {"memory", "duckdb", "spark"}


def test_png_export(tmp_path):
    pytest.importorskip("vl_convert")
    out = tmp_path / "figure.png"
    assert reproduce.plot(next(iter(reproduce.FIGURES)), _rows(), out) is True
    assert out.read_bytes()[:8] == PNG_MAGIC and out.stat().st_size > 5_000
