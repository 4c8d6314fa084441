"""JAM-PGM with public rows and public columns at once: three sources in one
selection (exact public columns, public-row proxy, noisy private measurement),
with JAM-PGM's budget arithmetic kept exact."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import replay_jam_schedule
from synth_core import Synthesizer
from synth_core import privacy as privacy_mod
from synth_core.engine import PRIVATE, PUBLIC
from synth_core.errors import ConfigError
from synth_core.mechanisms.jam_pgm import JAM_MEASURE_SHARE, JAM_SCORE_SENSITIVITY, PUBLIC_COLUMNS
from synth_core.privacy import rho_from_epsilon_delta

T = 5
ALPHA = JAM_MEASURE_SHARE
P = ("sex", "age")


def run_both(private, public, schema, epsilon, seed=0, public_columns=P):
    calls = []
    original = privacy_mod.exponential_mechanism

    def recording(scores, eps, sensitivity, rng):
        calls.append((eps, sensitivity, len(scores)))
        return original(scores, eps, sensitivity, rng)

    synth = Synthesizer("jam-pgm", epsilon=epsilon, rounds=T, seed=seed, workload="all-2way",
                        fit_iters=20, final_fit_iters=50)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(privacy_mod, "exponential_mechanism", recording)
        events = list(synth.run(private, public, schema=schema, public_columns=public_columns))
    return synth.result, events, calls


@pytest.fixture(scope="module", params=[0.3, pytest.param(3.0, marks=pytest.mark.slow)])
def both(request, small_private, small_public, small_schema):
    return request.param, run_both(small_private, small_public, small_schema, request.param)


def test_three_sources_compete_in_one_selection(both):
    _, (result, events, calls) = both
    assert all(sens == JAM_SCORE_SENSITIVITY == 4.0 for _, sens, _ in calls)
    for ev in events[1:]:
        pool = ev.curator.candidates
        for cand in pool:
            if set(cand.clique) <= set(P):   # inside the public columns: the exact answer only
                assert cand.source == PUBLIC_COLUMNS
            else:                            # a private column: noisy or public-row proxy
                assert cand.source in (PRIVATE, PUBLIC)
        private_cliques = {c.clique for c in pool if c.source == PRIVATE}
        assert private_cliques == {c.clique for c in pool if c.source == PUBLIC}


def test_sources_are_answered_from_the_right_data(both, small_private, small_public):
    _, (result, _, _) = both
    private, public = result.inputs.data.private, result.inputs.data.public
    for m in result.measurements:
        if m.source == PUBLIC_COLUMNS:    # exact, from the private table's own public columns
            assert set(m.clique) <= set(P) and m.noise_std == 0
            assert np.array_equal(m.values, private.marginal(m.clique))
        elif m.source == PUBLIC:          # the public rows rescaled to n
            assert np.allclose(m.values, public.marginal(m.clique) * private.n / public.n)
        else:
            assert m.noise_std > 0 and not set(m.clique) <= set(P)
    # the public 1-ways are measured exactly, for free, before any selection
    init = [m for m in result.measurements if m.round == 0]
    assert {m.clique for m in init} == {(c,) for c in P}
    assert all(c.round > 0 for c in result.ledger.charges)   # round 0 charged nothing


def test_budget_arithmetic_stays_exact(both):
    epsilon, (result, events, calls) = both
    rho = rho_from_epsilon_delta(epsilon, 1e-9)
    replay, _ = replay_jam_schedule(result.ledger, events[1:], rho, 0.0, T, ALPHA)
    for t, (_, rho_t, _) in enumerate(replay):
        assert calls[t][0] == pytest.approx(math.sqrt(8 * (1 - ALPHA) * rho_t), rel=1e-9)


@pytest.mark.slow
def test_without_public_columns_it_is_plain_jam_pgm(small_private, small_public, small_schema):
    both, _, _ = run_both(small_private, small_public, small_schema, 1.0, public_columns=())
    plain = Synthesizer("jam-pgm", epsilon=1.0, rounds=T, seed=0, workload="all-2way",
                        fit_iters=20, final_fit_iters=50).fit(small_private, small_public,
                                                              schema=small_schema)
    assert both.synthetic.equals(plain.synthetic)
    assert both.ledger.charges == plain.ledger.charges


def test_all_public_columns_are_refused(small_private, small_public, small_schema):
    with pytest.raises(ConfigError, match="Every column is marked public"):
        run_both(small_private, small_public, small_schema, 1.0,
                 public_columns=tuple(small_private.columns))


def test_report_records_both_kinds_of_public_information(both):
    _, (result, _, _) = both
    pub = result.report["public_information"]
    assert pub["columns"] == list(P) and pub["rows"] and pub["n_public"] == 400
    statement = result.report["privacy"]["statement"]
    assert "public rows" in statement and "Public columns (sex, age)" in statement
