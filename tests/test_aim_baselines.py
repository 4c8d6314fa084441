"""MST, PrivBayes+PGM and Independent, the AIM paper's baselines: their budget
schedules, what they select and measure, their accuracy against AIM, and their
place in the CLI and the app (both read the mechanism registry)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from synth_core import Synthesizer
from synth_core.mechanisms import MECHANISMS
from synth_core.errors import ConfigError
from synth_core.mechanisms.mst import MST_STEP_SHARE
from synth_core.mechanisms.privbayes import (PRIVBAYES_SELECT_SHARE, PRIVBAYES_THETA,
                                             usefulness_degree)
from synth_core.privacy import LEDGER_RELATIVE_TOLERANCE, Neighbours
from synth_core.report import CURATOR_ONLY_KEYS, check_release
from tiny_tables import FIT, PRIVATE, SCHEMA, SIZES

ROOT = Path(__file__).resolve().parent.parent
NEW = ("mst", "privbayes-pgm", "independent")
D = len(SIZES)


def fitted(mechanism: str, epsilon: float = 1.0, **settings):
    synth = Synthesizer(mechanism, epsilon=epsilon, seed=3, **{**FIT, **settings})
    events = list(synth.run(PRIVATE, schema=SCHEMA))
    return synth, events


def charges(ledger, step: str, round_=None) -> list[float]:
    return [c.rho for c in ledger.charges
            if c.step == step and (round_ is None or (c.round == 0) == (round_ == 0))]


def assert_spends_exactly(ledger):
    assert ledger.spent == pytest.approx(ledger.total, rel=1e-12)
    assert ledger.spent <= ledger.total * (1 + LEDGER_RELATIVE_TOLERANCE)


def is_spanning_tree(edges, columns) -> bool:
    """``len(columns) - 1`` edges joining every column (so no cycle)."""
    reached, frontier = {columns[0]}, [columns[0]]
    while frontier:
        node = frontier.pop()
        for a, b in edges:
            for x, y in ((a, b), (b, a)):
                if x == node and y not in reached:
                    reached.add(y)
                    frontier.append(y)
    return len(edges) == len(columns) - 1 and reached == set(columns)


# -- MST ----------------------------------------------------------------------------------

@pytest.mark.parametrize("neighbours", ["bounded", "unbounded"])
def test_mst_spends_a_third_per_step_and_measures_a_spanning_tree(neighbours):
    synth, events = fitted("mst", neighbours=neighbours)
    ledger = synth.result.ledger
    rho = ledger.total
    l2 = Neighbours(neighbours).marginal_l2_sensitivity
    ones = charges(ledger, "measure", 0)
    assert ones == pytest.approx([MST_STEP_SHARE * rho / D] * D, rel=1e-12)
    assert charges(ledger, "select") == pytest.approx([rho / (3 * (D - 1))] * (D - 1), rel=1e-9)
    twos = [c.rho for c in ledger.charges if c.step == "measure" and c.round > 0]
    assert twos == pytest.approx([rho / (3 * (D - 1))] * (D - 1), rel=1e-9)
    assert_spends_exactly(ledger)
    assert events[0].sigma == pytest.approx(l2 / math.sqrt(2 * rho / (3 * D)))
    edges = [ev.clique for ev in events[1:]]
    assert all(len(e) == 2 for e in edges) and is_spanning_tree(edges, list(SIZES))
    assert all(ev.epsilon == pytest.approx(math.sqrt(8 * rho / (3 * (D - 1)))) for ev in events[1:])


def test_mst_weighs_edges_once_with_the_one_way_model():
    """The edge weights come from the model of the 1-ways (as in MST), so a pair
    scores the same in every round it is a candidate, although the model is refitted
    after each edge's measurement."""
    _, events = fitted("mst", epsilon=5.0)
    first = {c.clique: s for c, s in zip(events[1].curator.candidates, events[1].curator.scores)}
    later = [(c.clique, s) for ev in events[2:]
             for c, s in zip(ev.curator.candidates, ev.curator.scores)]
    assert later and all(s == first[cl] for cl, s in later)


# -- PrivBayes+PGM ---------------------------------------------------------------------------

def test_privbayes_selects_a_network_and_measures_its_maximal_marginals():
    k = 2
    synth, events = fitted("privbayes-pgm", degree=k)
    ledger, rho = synth.result.ledger, synth.result.ledger.total
    assert [ev.round for ev in events] == list(range(1, D))        # no initialisation
    assert charges(ledger, "select") == pytest.approx(
        [PRIVBAYES_SELECT_SHARE * rho / (D - 1)] * (D - 1), rel=1e-12)
    measured = [c.rho for c in ledger.charges if c.step == "measure"]
    assert measured == pytest.approx([(1 - PRIVBAYES_SELECT_SHARE) * rho / (D - k)] * (D - k),
                                     rel=1e-9)
    assert_spends_exactly(ledger)
    # round j picks X and min(k, j) parents among the j columns already in the network
    network = set(events[0].clique[1:])            # the first column, drawn without the data
    for j, ev in enumerate(events, start=1):
        x, *parents = ev.clique
        assert len(network) == j and x not in network and set(parents) <= network
        assert len(parents) == min(k, j)
        network.add(x)
        assert (ev.sigma is None) == (j < k)        # the first k - 1 rounds only select
    assert network == set(SIZES)
    # the marginals measured: the d - k maximal ones, nothing inside another
    cliques = [set(m.clique) for m in synth.result.measurements]
    assert len(cliques) == D - k
    assert not any(a < b for a in cliques for b in cliques)


def test_privbayes_degree_rule_is_the_largest_useful_k():
    sizes = {f"x{i}": 2 for i in range(6)}
    for n, rho in [(100, 0.01), (5000, 0.5), (10 ** 6, 10.0)]:
        k = usefulness_degree(n, sizes, rho)

        def useful(j):
            std = math.sqrt(2) / math.sqrt(2 * (1 - PRIVBAYES_SELECT_SHARE) * rho / (6 - j))
            return n / (2 ** (j + 1) * std) >= PRIVBAYES_THETA

        assert 1 <= k <= 5
        assert useful(k) or k == 1
        assert not any(useful(j) for j in range(k + 1, 6))
    assert usefulness_degree(100, sizes, 0.01) == 1
    assert usefulness_degree(10 ** 6, sizes, 10.0) == 5
    # general domains: the typical marginal has g^(k+1) cells, g the geometric mean
    mixed = {"a": 2, "b": 8, "c": 4, "d": 4}        # g = 4
    rho = 1.0
    std = [math.sqrt(2) / math.sqrt(2 * (1 - PRIVBAYES_SELECT_SHARE) * rho / (4 - j))
           for j in (1, 2, 3)]
    n = math.ceil(PRIVBAYES_THETA * 4 ** 3 * std[1])     # just enough for k = 2
    assert n < PRIVBAYES_THETA * 4 ** 4 * std[2]         # not for k = 3
    assert usefulness_degree(n, mixed, rho) == 2
    assert usefulness_degree(n - 1, mixed, rho) == 1


def test_privbayes_is_bounded_only():
    with pytest.raises(ConfigError, match="bounded"):
        fitted("privbayes-pgm", neighbours="unbounded")


# -- Independent -------------------------------------------------------------------------------

@pytest.mark.parametrize("neighbours", ["bounded", "unbounded"])
def test_independent_measures_each_one_way_once_and_fits_their_product(neighbours):
    synth, events = fitted("independent", neighbours=neighbours)
    ledger = synth.result.ledger
    assert [c.step for c in ledger.charges] == ["measure"] * D
    assert charges(ledger, "measure") == pytest.approx([ledger.total / D] * D, rel=1e-12)
    assert_spends_exactly(ledger)
    assert len(events) == 1 and events[0].cliques == tuple((c,) for c in SIZES)
    l2 = Neighbours(neighbours).marginal_l2_sensitivity
    assert events[0].sigma == pytest.approx(l2 / math.sqrt(2 * ledger.total / D))
    model = synth.engine.model
    total = model.total
    pair = model.counts(("a", "c")).reshape(SIZES["a"], SIZES["c"])
    product = np.outer(model.counts(("a",)), model.counts(("c",))) / total
    assert np.allclose(pair, product, atol=1e-6 * total)


@pytest.mark.parametrize("name", NEW)
def test_the_release_holds_no_curator_only_value(name):
    """The report written for release passes the release check; the curator-only
    candidate scores stay in the events' ``curator`` field, which it leaves out."""
    synth, events = fitted(name)
    report = synth.result.report
    check_release(report)
    text = json.dumps(report)
    assert not any(f'"{key}"' in text for key in CURATOR_ONLY_KEYS)
    selecting = [ev for ev in events if ev.epsilon is not None]
    assert all(ev.curator is not None for ev in selecting)
    assert all("curator" not in ev.to_release() for ev in events)


# -- accuracy -------------------------------------------------------------------------------------

def test_aim_mst_and_privbayes_beat_independent_on_a_correlated_table(small_private,
                                                                     small_schema):
    """At epsilon 10 on a table with strong dependencies, the mechanisms that measure
    marginals over several columns have less than half the all-2-way workload error of
    the product of 1-ways."""
    def error(mechanism, **options):
        synth = Synthesizer(mechanism, epsilon=10.0, workload="all-2way", seed=0, fit_iters=50,
                            final_fit_iters=300, **options)
        result = synth.fit(small_private, schema=small_schema)
        return result.curator_diagnostics().workload_error

    independent = error("independent")
    assert error("aim", rounds=20) < 0.5 * independent
    assert error("mst") < 0.5 * independent
    assert error("privbayes-pgm") < 0.5 * independent


# -- CLI and app list them (from the registry) -----------------------------------------------------

def test_cli_help_lists_the_baselines():
    out = subprocess.run([sys.executable, "-m", "synth_core.cli", "run", "--help"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    for name in NEW:
        assert name in out.stdout


def test_workload_and_compare_pages_offer_and_run_the_baselines(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNTH_WORKBENCH_OUT", str(tmp_path))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.button(key="sample_titanic").click().run()
    at.switch_page("app_pages/workload.py").run()
    assert not at.exception
    titles = [MECHANISMS[name].title for name in NEW]
    offered = at.selectbox(key="mechanism").options       # shown as "<title>: what it does"
    assert all(any(o.startswith(f"{t}: ") for o in offered) for t in titles), offered
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception
    assert set(titles) <= set(at.multiselect(key="cmp_mechs").options)
    wb = at.session_state["wb"]
    wb.update_settings(fit_iters=20, final_fit_iters=50)
    at.multiselect(key="cmp_mechs").set_value(list(NEW))
    at.multiselect(key="cmp_eps").set_value([1.0])
    at.number_input(key="cmp_seeds").set_value(1)
    at.button[[b.label for b in at.button].index("Start comparison")].click().run()
    assert not at.exception and not at.error
    assert wb.compare.worker.wait(180), "the comparison did not finish in time"
    at.run()
    assert not at.exception and not at.error
    assert any("Comparison finished: 3 runs." in s.value for s in at.success)
