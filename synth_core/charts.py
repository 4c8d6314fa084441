"""Plotly figure builders shared by the workbench pages and notebooks.

The colours come from :mod:`synth_core.palette` (shared with the notebooks'
Altair figures): one colour per source everywhere, public measurements in
teal, private ones in orange, the initialisation (several marginals at once)
in grey. Figures take round events (:class:`~synth_core.engine.RoundEvent`)
or plain tables; none of them imports Streamlit.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .palette import (MECHANISM_PALETTE, MIXED_COLOR, PRIVATE_COLOR, PUBLIC_COLOR,  # noqa: F401
                      PUBLIC_COLUMNS_COLOR, SELECT_COLOR, SOURCE_COLORS, TOTAL_COLOR,
                      mechanism_color, source_color)


def _layout(fig: go.Figure, title: str, height: int = 320) -> go.Figure:
    fig.update_layout(title=dict(text=title, x=0, font=dict(size=15)), height=height,
                      margin=dict(l=10, r=10, t=70 if title else 45, b=10),
                      template="plotly_white",
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=1, xanchor="right"))
    return fig


def _round_axis(fig: go.Figure, events: Sequence, max_ticks: int = 20, **kwargs) -> None:
    """Whole-number round ticks, at most about ``max_ticks`` of them: a step of
    ``ceil(last round / max_ticks)`` rounds."""
    last = max([e.round for e in events], default=0)
    fig.update_xaxes(title="round", dtick=max(1, math.ceil(last / max_ticks)), tick0=0,
                     **kwargs)


#: mantissas of the labelled ticks of a log axis (1-2-5 per decade)
LOG_MANTISSAS = (1, 2, 5)


def log_ticks(values: Sequence[float], max_ticks: int = 9) -> tuple[list[float], list[str]]:
    """Labelled ticks of a log axis over ``values``: the 1-2-5 numbers of each
    decade from the largest power of ten <= min(values) to the smallest >=
    max(values), only the powers of ten when those are more than ``max_ticks``;
    labels in short form (``%g``: 0.1, 2, 50). Plotly's own log ticks label
    every minor tick with its first digit ("9 0.1 2 3 ... 9 1")."""
    positive = [float(v) for v in values if v and v > 0]
    if not positive:
        return [], []
    low = math.floor(math.log10(min(positive)))
    high = math.ceil(math.log10(max(positive)))
    ticks = [m * 10.0 ** d for d in range(low, high + 1) for m in LOG_MANTISSAS
             if m * 10.0 ** d <= 10.0 ** high]
    if len(ticks) > max_ticks:
        ticks = [10.0 ** d for d in range(low, high + 1)]
    ticks = [float(f"{t:.12g}") for t in ticks]
    return ticks, [f"{t:g}" for t in ticks]


def _log_epsilon_axis(fig: go.Figure, epsilons: Sequence[float]) -> None:
    """A log x axis of epsilon with the labelled ticks of :func:`log_ticks`."""
    vals, text = log_ticks(epsilons)
    fig.update_xaxes(type="log", title="epsilon (log scale)", tickvals=vals or None,
                     ticktext=text or None, minor=dict(showgrid=False, ticks=""))


def _label(event) -> str:
    if not event.cliques:
        return "-"
    if len(event.cliques) > 1:
        return f"{len(event.cliques)} marginals"
    return " × ".join(event.cliques[0])


def rounds_figure(events: Sequence, rounds_planned: int | None = None) -> go.Figure:
    """The chosen marginal of every round, coloured by public/private source."""
    fig = go.Figure()
    for source in ("private", "public", "public-columns", "other"):
        evs = [e for e in events if (e.source == source) or
               (source == "other" and e.source not in SOURCE_COLORS)]
        if not evs:
            continue
        fig.add_trace(go.Scatter(
            x=[e.round for e in evs], y=[_label(e) for e in evs], mode="markers",
            name={"other": "initialisation"}.get(source, source),
            marker=dict(size=13, color=source_color(source), symbol="square"),
            hovertemplate="round %{x}: %{y}<extra>" + source + "</extra>"))
    if rounds_planned:
        fig.update_xaxes(range=[-0.5, rounds_planned + 0.5])
    _round_axis(fig, events)
    fig.update_yaxes(title=None, type="category")
    n_labels = len({_label(e) for e in events})
    return _layout(fig, "Chosen marginal per round (public or private source)",
                   height=max(260, 120 + 22 * n_labels))


def budget_figure(events: Sequence) -> go.Figure:
    """Cumulative budget (rho) spent on selection and on measurement, against the run's
    own rho (not the table's total budget, which the sidebar shows)."""
    rounds = [e.round for e in events]
    sel, meas = [], []
    s = m = 0.0
    for e in events:
        s += e.rho_select
        m += e.rho_measure
        sel.append(s)
        meas.append(m)
    fig = go.Figure()
    fig.add_trace(go.Bar(x=rounds, y=sel, name="selection", marker_color=SELECT_COLOR))
    fig.add_trace(go.Bar(x=rounds, y=meas, name="measurement", marker_color=PRIVATE_COLOR))
    if events:
        total = events[-1].rho_total
        fig.add_trace(go.Scatter(x=[min(rounds) - 0.5, max(rounds) + 0.5], y=[total, total],
                                 mode="lines", name="this run's budget",
                                 line=dict(color=TOTAL_COLOR, dash="dash")))
    fig.update_layout(barmode="stack")
    _round_axis(fig, events)
    fig.update_yaxes(title="rho spent (cumulative)")
    return _layout(fig, "Privacy budget: selection vs measurement vs this run's budget")


def sigma_size_figure(events: Sequence) -> go.Figure:
    """Noise std per private measurement and the model size per round."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.16,
                        subplot_titles=("noise std (sigma) per round", "model size (MB)"))
    priv = [e for e in events if e.sigma is not None]
    fig.add_trace(go.Scatter(x=[e.round for e in priv], y=[e.sigma for e in priv],
                             mode="lines+markers", name="sigma",
                             marker=dict(color=PRIVATE_COLOR), line=dict(color=PRIVATE_COLOR)),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=[e.round for e in events], y=[e.model_size_mb for e in events],
                             mode="lines+markers", name="model size",
                             marker=dict(color=TOTAL_COLOR), line=dict(color=TOTAL_COLOR)),
                  row=1, col=2)
    _round_axis(fig, events, max_ticks=6)   # two charts side by side in half the page
    fig.update_yaxes(tickformat=".3~g", nticks=5, rangemode="tozero")
    fig.update_layout(showlegend=False)
    return _layout(fig, "", height=280)


def candidates_figure(table: pd.DataFrame, top: int = 25) -> go.Figure:
    """CURATOR-ONLY: the candidate pool's scores by source, the chosen one outlined."""
    t = table.sort_values("score", ascending=False).head(top)
    chosen = table[table["chosen"]]
    if len(chosen) and not t["chosen"].any():
        t = pd.concat([t, chosen])
    t = t.iloc[::-1]
    labels = [f"{m} ({s})" for m, s in zip(t["marginal"], t["source"])]
    fig = go.Figure(go.Bar(
        x=t["score"], y=labels, orientation="h",
        marker=dict(color=[source_color(s) for s in t["source"]],
                    line=dict(color=["black" if c else "rgba(0,0,0,0)" for c in t["chosen"]],
                              width=[3 if c else 0 for c in t["chosen"]])),
        text=["chosen" if c else "" for c in t["chosen"]], textposition="outside",
        hovertemplate="%{y}: score %{x:.4g}<extra></extra>"))
    fig.update_xaxes(title="score (exact, from the private data)")
    fig.update_yaxes(type="category")
    return _layout(fig, f"CURATOR-ONLY candidate scores (top {min(top, len(table))} of "
                        f"{len(table)}; teal public, orange private)",
                   height=max(300, 80 + 20 * len(t)))


def proxy_error_figure(table: pd.DataFrame, top: int = 30) -> go.Figure:
    """CURATOR-ONLY: public proxy error per workload marginal."""
    t = table.head(top).iloc[::-1]
    fig = go.Figure(go.Bar(x=t["public proxy error"], y=t["marginal"], orientation="h",
                           marker_color=PUBLIC_COLOR,
                           hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    fig.update_xaxes(title="L1 distance of normalised marginals (public vs private)")
    fig.update_yaxes(type="category")
    return _layout(fig, f"CURATOR-ONLY public proxy error (worst {min(top, len(table))} of "
                        f"{len(table)} marginals)", height=max(300, 80 + 18 * len(t)))


def compare_summary(results: pd.DataFrame) -> pd.DataFrame:
    """Mean, smallest and largest workload error per mechanism and epsilon (over the
    seeds), the standard deviation (None for one run: it is undefined), the runs and
    the most rounds one of them ran (a mechanism that stopped early explains a high
    error: AIM given few rounds anneals through them in two or three)."""
    ok = results[results["status"] == "finished"].copy()
    if ok.empty:
        return pd.DataFrame(columns=["mechanism", "epsilon", "mean", "min", "max", "std", "runs",
                                     "rounds"])
    ok["workload_error"] = ok["workload_error"].astype(float)
    g = ok.groupby(["mechanism", "epsilon"])["workload_error"]
    out = g.agg(["mean", "min", "max", "std", "count"]).reset_index() \
        .rename(columns={"count": "runs"})
    rounds = pd.to_numeric(ok["rounds"], errors="coerce") if "rounds" in ok else None
    out["rounds"] = (ok.assign(rounds=rounds).groupby(["mechanism", "epsilon"])["rounds"].max()
                     .reindex(pd.MultiIndex.from_frame(out[["mechanism", "epsilon"]])).to_numpy()
                     if rounds is not None else None)
    out["std"] = out["std"].astype(object).where(out["runs"] > 1, None)
    return out.sort_values(["mechanism", "epsilon"], ignore_index=True)


def _named(labels: Mapping[str, str] | None, name: str) -> str:
    """A mechanism's name for a legend: ``labels[name]`` when given, else ``name``."""
    return (labels or {}).get(name, name)


def compare_figure(results: pd.DataFrame, reference: float | None = None,
                   labels: Mapping[str, str] | None = None) -> go.Figure:
    """CURATOR-ONLY: workload error against epsilon (log x), error bars over seeds,
    and the public rows alone as a reference line. ``labels`` names the
    mechanisms in the legend (registry name -> full name)."""
    summary = compare_summary(results)
    names = sorted(summary["mechanism"].unique()) if len(summary) else []
    fig = go.Figure()
    for name in names:
        t = summary[summary["mechanism"] == name]
        color = mechanism_color(name, names)
        fig.add_trace(go.Scatter(
            x=t["epsilon"], y=t["mean"], mode="lines+markers", name=_named(labels, name),
            error_y=dict(type="data", symmetric=False, visible=True,
                         array=t["max"] - t["mean"], arrayminus=t["mean"] - t["min"]),
            line=dict(color=color, dash="dot" if name == "public-only" else "solid"),
            marker=dict(color=color, size=8),
            customdata=t["runs"],
            hovertemplate=f"{_named(labels, name)}: ε=%{{x:g}}, error %{{y:.4f}} "
                          "(%{customdata} runs)<extra></extra>"))
    if reference is not None:
        # the public rows themselves, not the public-only baseline (a model fitted to
        # them and sampled, which has the public colour): a neutral line, its value named
        fig.add_hline(y=reference, line=dict(color=TOTAL_COLOR, dash="dash", width=1),
                      annotation_text=f"public rows alone (the rows themselves): "
                                      f"{reference:.4g}", annotation_position="bottom right")
    _log_epsilon_axis(fig, summary["epsilon"].astype(float).tolist())
    # the same convention as the what-if chart and the notebooks' error_chart
    fig.update_yaxes(title="workload error (mean; bars: min to max over seeds)",
                     rangemode="tozero")
    return _layout(fig, "CURATOR-ONLY workload error against epsilon", height=420)


def per_marginal_figure(marginals: pd.DataFrame, epsilon: float, top: int = 20,
                        labels: Mapping[str, str] | None = None) -> go.Figure:
    """CURATOR-ONLY: mean error per workload marginal and mechanism at one epsilon."""
    t = marginals[marginals["epsilon"].astype(float) == float(epsilon)]
    mean = t.groupby(["marginal", "mechanism"])["error"].mean().reset_index()
    worst = (mean.groupby("marginal")["error"].max().sort_values(ascending=False)
             .head(top).index.tolist())
    mean = mean[mean["marginal"].isin(worst)]
    names = sorted(mean["mechanism"].unique())
    fig = go.Figure()
    for name in names:
        m = mean[mean["mechanism"] == name].set_index("marginal").reindex(worst[::-1])
        fig.add_trace(go.Bar(x=m["error"], y=m.index, orientation="h", name=_named(labels, name),
                             marker_color=mechanism_color(name, names)))
    fig.update_layout(barmode="group")
    fig.update_xaxes(title="error of the marginal (L1 of normalised marginals)")
    fig.update_yaxes(type="category")
    return _layout(fig, f"CURATOR-ONLY per-marginal error at ε = {epsilon:g} (worst {len(worst)})",
                   height=max(320, 90 + 14 * len(worst) * max(1, len(names))))


def whatif_figure(curves: Sequence, labels: Mapping[str, str] | None = None) -> go.Figure:
    """Predicted workload error against epsilon (log x) of what-if curves
    (:class:`~synth_core.whatif.WhatIfCurve`). Per mechanism: a dotted line
    through all points; ``measured`` points (stand-in runs) as filled diamonds
    with bars from min to max over seeds; ``estimate`` points (no run) as hollow
    circles. Built from public information only, so not curator-only."""
    names = [c.mechanism for c in curves]
    fig = go.Figure()
    for c in curves:
        if not c.points:
            continue
        color = mechanism_color(c.mechanism, names)
        fig.add_trace(go.Scatter(
            x=[p.epsilon for p in c.points], y=[p.mean for p in c.points], mode="lines",
            line=dict(color=color, dash="dot"), legendgroup=c.mechanism, showlegend=False,
            hoverinfo="skip"))
        for kind, label, marker in (
                ("measured", "measured (stand-in run)", dict(symbol="diamond", size=9)),
                ("estimate", "estimate (no run yet)",
                 dict(symbol="circle-open", size=10, line=dict(width=2)))):
            pts = [p for p in c.points if p.kind == kind]
            if not pts:
                continue
            bars = None
            if kind == "measured":
                bars = dict(type="data", symmetric=False, visible=True,
                            array=[p.high - p.mean for p in pts],
                            arrayminus=[p.mean - p.low for p in pts])
            fig.add_trace(go.Scatter(
                x=[p.epsilon for p in pts], y=[p.mean for p in pts], mode="markers",
                name=f"{_named(labels, c.mechanism)}: {label}", legendgroup=c.mechanism,
                error_y=bars,
                marker=dict(color=color, **marker),
                hovertemplate=f"{_named(labels, c.mechanism)}: ε=%{{x:g}}, {kind} error "
                              "%{y:.4f}<extra></extra>"))
    _log_epsilon_axis(fig, [p.epsilon for c in curves for p in c.points])
    # a short axis title: a long one runs past the plot's height into the chart title
    fig.update_yaxes(title="predicted workload error", rangemode="tozero")
    fig = _layout(fig, "What-if: predicted workload error against epsilon (no budget spent)"
                       "<br><sup>measured points: mean over seeds, bars from min to max</sup>",
                  height=440)
    # the legend (two entries per mechanism) under the plot, clear of the two-line title
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.22, x=0, xanchor="left"),
                      margin=dict(b=90))
    return fig
