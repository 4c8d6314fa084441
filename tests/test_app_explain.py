"""AppTest: the Run and Release pages explain a run's numbers with its own figures,
show real, public and synthetic data side by side (the real side curator-only),
and release nothing of the real distribution."""

from __future__ import annotations

import json

import numpy as np
import pytest

from synth_core import explain, side_by_side as sbs
from test_app_pages import errors, go, load_titanic, new_app, texts, wait_for_run


@pytest.fixture(scope="module")
def ran():
    """The app after one seeded JAM-PGM run on the Titanic sample (5 cheap rounds)."""
    at = go(load_titanic(new_app()), "app_pages/workload.py")
    wb = at.session_state["wb"]
    wb.update_settings(rounds=5, fit_iters=20, final_fit_iters=40, seed=0)
    go(at, "app_pages/run.py")
    at.button(key="start_run").click().run()
    wait_for_run(at)
    at.run()
    assert not at.exception and not errors(at)
    assert wb.runs and wb.runs[0].ok
    return at


def chart_specs(at) -> list[dict]:
    return [json.loads(p.proto.spec) for p in at.get("plotly_chart")]


def trace_names(spec: dict) -> list[str]:
    return [t.get("name") for t in spec["data"]]


def test_run_page_explains_the_privacy_figures_with_this_runs_numbers(ran):
    at = go(ran, "app_pages/run.py")
    result = at.session_state["wb"].runs[0].result
    p = result.report["privacy"]
    labels = [e.label for e in at.expander]
    assert "What ε, δ, ρ and the neighbour relation mean here" in labels
    box = at.expander[labels.index("What run 1's ε, δ, ρ and neighbour relation mean")]
    text = "\n".join(m.value for m in box.markdown)
    assert f"ρ = {p['rho']:.4g} is the zCDP budget equivalent to ε = 1, δ = 1e-09" in text
    assert f"spent ρ = {p['rho_spent']:.4g}" in text
    assert f"n = {result.report['data']['n']:,}" in text
    assert all(m.help and "0.3 means 15%" in m.help for m in at.metric)
    note = explain.unspent_note(result.events, result.ledger.total, result.ledger.spent)
    assert note and note in [i.value for i in at.info]
    diag, proxy = result.curator_diagnostics().workload_error, result.public_proxy_error()
    shown = [w.value for w in at.warning] + [s.value for s in at.success]
    assert any(f"{diag:.3f}" in v and f"{proxy:.3f}" in v and "public rows alone" in v
               for v in shown)


def test_candidate_pool_shows_probabilities_that_sum_to_one(ran):
    at = go(ran, "app_pages/run.py")
    result = at.session_state["wb"].runs[0].result
    for pick in (1, "latest"):
        at.selectbox(key="pool_round_run1").set_value(pick).run()
        assert not at.exception
        table = next(d.value for d in at.dataframe if "probability" in d.value.columns)
        assert table["probability"].sum() == pytest.approx(1.0)
        assert table["chosen"].sum() == 1
        round_ = 1 if pick == 1 else max(e.round for e in result.events)
        ev = next(e for e in result.events if e.round == round_)
        expected = np.sort(explain.selection_probabilities(ev))[::-1]
        assert np.sort(table["probability"].to_numpy())[::-1] == pytest.approx(expected)
        assert explain.selection_note(ev) in [c.value for c in at.caption]


def test_side_by_side_chart_shows_real_public_and_synthetic(ran):
    at = go(ran, "app_pages/run.py")
    result = at.session_state["wb"].runs[0].result
    picker = at.selectbox(key="sbs_run1")
    clique = tuple(result.workload.cliques[0])
    picker.set_value(clique).run()
    assert not at.exception and not errors(at)
    specs = [s for s in chart_specs(at) if "real (curator-only)" in trace_names(s)]
    assert len(specs) == 1 and trace_names(specs[0]) == ["real (curator-only)", "public",
                                                        "synthetic"]
    frame = sbs.marginal_frame(result.inputs.schema, clique, sbs.run_tables(result))
    captions = [c.value for c in at.caption]
    assert sbs.error_scale(frame).text() in captions
    assert sbs.error_scale(frame, sbs.PUBLIC).text() in captions
    l1 = result.curator_diagnostics().per_marginal[clique]
    assert f"An L1 error of {l1:.2f} on {' × '.join(clique)}" in "\n".join(captions)


def real_vectors(result) -> list[np.ndarray]:
    """The real counts and shares of every column and workload marginal."""
    private = result.inputs.data.private
    out = []
    for clique in sbs.marginal_choices(result.inputs.schema, result.workload.cliques):
        counts = private.marginal(clique)
        out += [counts, counts / counts.sum()]
    return out


def number_lists(obj):
    """Every list of numbers inside a parsed JSON document."""
    if isinstance(obj, dict):
        for value in obj.values():
            yield from number_lists(value)
    elif isinstance(obj, list):
        if obj and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in obj):
            yield np.asarray(obj, dtype=float)
        for value in obj:
            yield from number_lists(value)


def test_release_page_shows_only_the_synthetic_side_and_files_hold_no_real_distribution(ran):
    at = go(ran, "app_pages/release.py")
    assert not errors(at) and "CURATOR" not in texts(at)
    wb = at.session_state["wb"]
    run = wb.runs[0]
    specs = chart_specs(at)
    assert specs and all("real" not in " ".join(trace_names(s)) for s in specs)
    assert any(trace_names(s) == ["public", "synthetic"] for s in specs)
    bounds = next(d.value for d in at.dataframe if "marginal" in d.value.columns
                  and any("bound" in c for c in d.value.columns))
    assert "95% bound (L1 counts)" in bounds.columns
    report = json.loads(wb.release_files(run)["report.json"])
    real = real_vectors(run.result)
    planted = {"x": {"y": [1, real[0].tolist()]}}
    assert any(np.allclose(v, real[0]) for v in number_lists(planted))   # the search finds one
    for values in number_lists(report):
        for vector in real:
            assert not (values.shape == vector.shape and np.allclose(values, vector)), \
                "the report carries a real marginal"
