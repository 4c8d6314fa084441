"""Static benchmark figures: the paper reproductions in Altair (PNG through vl-convert,
the [notebook] extra), the cost curves in Plotly (PNG through kaleido, the [bench] extra)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
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
    records = [dict(backend=b, rows=r, count_seconds=r / 1e5 * k)
               for b, k in (("memory", 1.0), ("duckdb", 0.5)) for r in (1e5, 1e6)]
    fig = cost_curves.plot_figure(records)
    assert [t.name for t in fig.data] == ["duckdb", "memory"]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert list(fig.data[1].y) == [1.0, 10.0]


def test_png_export(tmp_path):
    pytest.importorskip("vl_convert")
    out = tmp_path / "figure.png"
    assert reproduce.plot(next(iter(reproduce.FIGURES)), _rows(), out) is True
    assert out.read_bytes()[:8] == PNG_MAGIC and out.stat().st_size > 5_000


def test_png_export_without_kaleido_names_the_extra(tmp_path):
    """In a child that cannot import kaleido, no file and a message naming [bench]."""
    out = tmp_path / "figure.png"
    code = textwrap.dedent(f"""
        import importlib.abc, sys
        class NoKaleido(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "kaleido" or name.startswith("kaleido."):
                    raise ModuleNotFoundError(name)
        sys.meta_path.insert(0, NoKaleido())
        import plotly.graph_objects as go
        from synth_core.charts import write_png
        print(write_png(go.Figure(go.Scatter(x=[1], y=[1])), {str(out)!r}, width=300, height=200))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert 'kaleido is not installed: pip install -e ".[bench]"' in done.stdout
    assert not out.exists()

