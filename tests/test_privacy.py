"""The privacy arithmetic: conversions, costs, the ledger, and the samplers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from synth_core import privacy
from synth_core.errors import BudgetExceededError, ConfigError
from synth_core.privacy import Ledger, Neighbours


# -- (epsilon, delta) <-> rho ----------------------------------------------------

def opendp_epsilon(rho: float, delta: float) -> float:
    """epsilon of rho-zCDP at delta, by OpenDP's zCDP -> approximate-DP conversion."""
    import opendp.prelude as dp
    dp.enable_features("contrib")
    scale = 1.0 / math.sqrt(2 * rho)  # Gaussian on sensitivity 1: rho = 1 / (2 scale^2)
    meas = dp.m.make_gaussian(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float),
                              scale=scale)
    assert meas.map(1.0) == pytest.approx(rho, rel=1e-9)
    return dp.c.make_zCDP_to_approxDP(meas).map(1.0).epsilon(delta)


@pytest.mark.parametrize("rho,delta", [(0.5, 1e-9), (0.01, 1e-9), (1.0, 1e-5), (0.1, 1e-6), (5.0, 1e-9)])
def test_cdp_epsilon_matches_opendp(rho, delta):
    assert privacy.cdp_epsilon(rho, delta) == pytest.approx(opendp_epsilon(rho, delta), rel=1e-6)


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-9), (1.0, 1e-9), (10.0, 1e-9), (1.0, 1e-5)])
def test_rho_round_trips_through_opendp(eps, delta):
    rho = privacy.rho_from_epsilon_delta(eps, delta)
    assert opendp_epsilon(rho, delta) == pytest.approx(eps, rel=1e-6)
    # largest such rho: a slightly larger rho breaks (eps, delta)
    assert privacy.cdp_delta(rho * 1.001, eps) > delta


def test_known_values():
    # the common rule of thumb eps = rho + 2 sqrt(rho log(1/delta)) is an upper bound
    rho = 0.5
    bound = rho + 2 * math.sqrt(rho * math.log(1e9))
    assert privacy.cdp_epsilon(rho, 1e-9) < bound
    assert privacy.cdp_epsilon(0.5, 1e-9) == pytest.approx(6.47407, abs=1e-4)
    assert privacy.cdp_delta(0.0, 1.0) == 0.0


def test_conversion_rejects_bad_inputs():
    with pytest.raises(ConfigError, match="delta"):
        privacy.rho_from_epsilon_delta(1.0, 0.0)
    with pytest.raises(ConfigError, match="epsilon"):
        privacy.rho_from_epsilon_delta(-1.0, 1e-9)


# -- costs and sensitivities -----------------------------------------------------

def test_gaussian_calibration():
    for l2 in (1.0, math.sqrt(2)):
        for rho in (0.001, 0.3, 4.0):
            std = privacy.gaussian_std(rho, l2)
            assert privacy.gaussian_rho(std, l2) == pytest.approx(rho, rel=1e-12)
    # bounded DP: L2 sensitivity sqrt(2), so variance 1/rho (JAM-PGM's sigma_t^2 = 1/rho_measure)
    assert privacy.gaussian_std(0.25, Neighbours.BOUNDED.marginal_l2_sensitivity) ** 2 == pytest.approx(4.0)
    rng = np.random.default_rng(0)
    noise = privacy.gaussian_noise(rng, 3.0, 200_000)
    assert noise.std() == pytest.approx(3.0, rel=0.01)
    assert abs(noise.mean()) < 0.03


def test_selection_costs():
    assert privacy.exponential_rho(privacy.exponential_eps(0.02)) == pytest.approx(0.02)
    assert privacy.exponential_rho(2.0) == 0.5
    assert privacy.permute_and_flip_rho(2.0) == 2.0


def test_neighbour_sensitivities():
    assert Neighbours.BOUNDED.marginal_l1_sensitivity == 2
    assert Neighbours.BOUNDED.marginal_l2_sensitivity == pytest.approx(math.sqrt(2))
    assert Neighbours.UNBOUNDED.marginal_l1_sensitivity == 1
    assert Neighbours.UNBOUNDED.marginal_l2_sensitivity == 1
    with pytest.raises(ConfigError, match="bounded"):
        Neighbours.parse("sideways")


# -- samplers: frequencies match the distributions --------------------------------

def _chi_square_p(counts, probs):
    expected = probs * counts.sum()
    return stats.chisquare(counts, expected).pvalue


def test_exponential_mechanism_frequencies():
    scores = np.array([0.0, 1.0, 2.0, 4.0, 4.0, -50.0])
    eps, sens = 1.5, 1.0
    rng = np.random.default_rng(123)
    draws = [privacy.exponential_mechanism(scores, eps, sens, rng) for _ in range(40_000)]
    counts = np.bincount(draws, minlength=scores.size)
    probs = privacy.exponential_probabilities(scores, eps, sens)
    assert probs[3] == pytest.approx(probs[4])
    keep = probs * len(draws) > 5
    assert _chi_square_p(counts[keep], probs[keep] / probs[keep].sum()) > 1e-3
    assert counts[5] == 0  # probability ~ e^-40


def test_exponential_mechanism_is_stable_for_huge_scores():
    rng = np.random.default_rng(0)
    scores = np.array([1e12, 1e12 + 1e6, 0.0])
    assert privacy.exponential_mechanism(scores, 1.0, 1.0, rng) == 1
    probs = privacy.exponential_probabilities(scores, 1.0, 1.0)
    assert np.all(np.isfinite(probs)) and probs[1] == pytest.approx(1.0)


def permute_and_flip_exact(scores, eps, sens):
    """Exact output distribution of permute-and-flip by enumerating permutations."""
    import itertools
    q = np.exp(eps * (np.asarray(scores) - max(scores)) / (2 * sens))
    k = len(scores)
    probs = np.zeros(k)
    perms = list(itertools.permutations(range(k)))
    for perm in perms:
        reach = 1.0
        for i in perm:
            probs[i] += reach * q[i] / len(perms)
            reach *= 1 - q[i]
    return probs


def test_permute_and_flip_frequencies():
    scores = [0.0, 1.0, 2.5, 3.0]
    eps, sens = 1.2, 1.0
    rng = np.random.default_rng(7)
    draws = [privacy.permute_and_flip(np.array(scores), eps, sens, rng) for _ in range(40_000)]
    counts = np.bincount(draws, minlength=len(scores))
    probs = permute_and_flip_exact(scores, eps, sens)
    assert probs.sum() == pytest.approx(1.0)
    assert _chi_square_p(counts, probs) > 1e-3


# -- the ledger -------------------------------------------------------------------

def test_ledger_records_and_refuses():
    ledger = Ledger(1.0)
    ledger.charge(0.4, round=1, step="select", mechanism="exponential")
    ledger.charge(0.6, round=1, step="measure", mechanism="gaussian", detail="a×b")
    assert ledger.spent == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError, match="Refused"):
        ledger.charge(1e-6, round=2, step="select", mechanism="exponential")
    assert len(ledger.charges) == 2
    assert ledger.spent_by_step() == {"select": 0.4, "measure": 0.6}
    assert ledger.to_json()["charges"][1]["detail"] == "a×b"


def test_ledger_rejects_invalid_charges():
    ledger = Ledger(1.0)
    for bad in (-0.1, math.nan, math.inf):
        with pytest.raises(ConfigError):
            ledger.charge(bad, round=1, step="select", mechanism="exponential")
    with pytest.raises(ConfigError):
        Ledger(0.0)


@settings(max_examples=300, deadline=None)
@given(total=st.floats(1e-6, 100.0),
       charges=st.lists(st.floats(0.0, 2.0), min_size=1, max_size=60))
def test_ledger_never_overspends(total, charges):
    ledger = Ledger(total)
    for i, fraction in enumerate(charges):
        rho = fraction * total / 4
        before = ledger.spent
        if before + rho <= total:
            ledger.charge(rho, round=i, step="measure", mechanism="gaussian")
        else:
            try:
                ledger.charge(rho, round=i, step="measure", mechanism="gaussian")
            except BudgetExceededError:
                assert ledger.spent == before  # a refused charge records nothing
        assert ledger.spent <= total * (1 + privacy.LEDGER_RELATIVE_TOLERANCE)
    assert ledger.spent == pytest.approx(math.fsum(c.rho for c in ledger.charges))


@settings(max_examples=100, deadline=None)
@given(total=st.floats(1e-4, 10.0), parts=st.integers(1, 50))
def test_ledger_spends_exactly_what_is_left(total, parts):
    ledger = Ledger(total)
    for i in range(parts - 1):
        ledger.charge(ledger.remaining / (parts - i), round=i, step="measure", mechanism="gaussian")
    ledger.charge(ledger.total - ledger.spent, round=parts, step="measure", mechanism="gaussian")
    assert ledger.spent == pytest.approx(total, rel=1e-12)
    with pytest.raises(BudgetExceededError):
        ledger.charge(total * 1e-6, round=parts + 1, step="select", mechanism="exponential")
