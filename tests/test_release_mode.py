"""Release mode: discrete Gaussian measurements and secure selection.

Research mode (seeded numpy noise) keeps its seeded output; release mode must
measure integer counts with OpenDP's discrete Gaussian at the same cost, select
with noise from OpenDP's secure sampler, refuse a seed, and say so in the report.
No mocks: OpenDP and the engine run for real.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from synth_core import Synthesizer, load_sample
from synth_core import privacy
from synth_core.api import RunConfig
from synth_core.cli import main
from synth_core.errors import ConfigError
from synth_core.report import check_release

SIZES = {"a": 2, "b": 3, "c": 2, "d": 2}
TINY_GEM = dict(hidden=(8, 8), noise_dim=4, batch=16, inner_steps=2, threads=1)


def tiny_tables(n=80, n_pub=30, seed=0):
    rng = np.random.default_rng(seed)
    private = pd.DataFrame({c: rng.integers(0, k, n) for c, k in SIZES.items()})
    public = pd.DataFrame({c: np.minimum(rng.integers(0, k, n_pub), rng.integers(0, k, n_pub))
                           for c, k in SIZES.items()})
    return private, public


def tiny_run(mechanism, *, seed, mode=None, public=False, rounds=2, **options):
    private, pub = tiny_tables()
    synth = Synthesizer(mechanism, epsilon=1.0, delta=1e-9, workload="all-2way", rounds=rounds,
                        seed=seed, mode=mode, fit_iters=5, final_fit_iters=5, **options)
    return synth.fit(private, pub if public else None, schema=dict(SIZES))


def private_values(result) -> np.ndarray:
    return np.concatenate([np.asarray(m.values, dtype=float) for m in result.measurements
                           if m.source == "private"] + [np.zeros(0)])


# -- choosing the mode ---------------------------------------------------------------

def test_mode_defaults_and_a_seed_is_refused_in_release_mode():
    assert privacy.resolve_mode(None, 0) == "research"
    assert privacy.resolve_mode(None, None) == "release"
    assert privacy.resolve_mode("research", None) == "research"
    assert privacy.resolve_mode("release", None) == "release"
    assert Synthesizer("aim", seed=3).config.run_mode == "research"
    assert Synthesizer("aim", seed=None).config.run_mode == "release"
    with pytest.raises(ConfigError, match="Release mode cannot be seeded"):
        Synthesizer("jam-pgm", seed=0, mode="release")
    with pytest.raises(ConfigError, match="Release mode cannot be seeded"):
        RunConfig(seed=7, mode="release").validate()
    with pytest.raises(ConfigError, match="Unknown run mode"):
        Synthesizer("jam-pgm", seed=0, mode="fast")


def test_the_defaults_are_release_mode():
    assert Synthesizer("aim").config.run_mode == "release"
    assert RunConfig().seed is None and RunConfig().run_mode == "release"
    from synth_core import synthesize
    private, _ = tiny_tables()
    result = synthesize(private, mechanism="mwem-pgm", epsilon=1.0, workload="all-1way",
                        rounds=1, fit_iters=5, final_fit_iters=5, schema=dict(SIZES))
    assert result.report["privacy"]["mode"] == "release" and not result.report["privacy"]["seeded"]


def test_cli_refuses_a_seeded_release_and_runs_one_unseeded(tmp_path, capsys):
    code = main(["run", "--sample", "titanic", "--seed", "0", "--mode", "release",
                 "--out", str(tmp_path / "s.csv"), "--report", str(tmp_path / "r.json")])
    assert code == 2
    assert "Release mode cannot be seeded" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
    code = main(["run", "--sample", "titanic", "--mechanism", "jam-pgm", "--rounds", "2",
                 "--workload", "all-1way", "--fit-iters", "5", "--final-fit-iters", "5",
                 "--quiet", "--out", str(tmp_path / "s.csv"), "--report", str(tmp_path / "r.json")])
    assert code == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["config"]["mode"] == "release" and "seed" not in report["config"]
    assert report["privacy"]["mode"] == "release" and not report["privacy"]["seeded"]
    for m in report["measurements"]:
        if m["source"] == "private":
            assert all(float(v).is_integer() for v in m["noisy_answer"])


# -- the building blocks ---------------------------------------------------------------

def test_research_noise_is_the_seeded_samplers_draw_for_draw():
    exact = np.arange(12, dtype=float)
    scores = np.array([0.0, 2.0, -np.inf, 1.5, 3.0])
    src = privacy.ResearchNoise(np.random.default_rng(11))
    ref = np.random.default_rng(11)
    for _ in range(3):
        assert np.array_equal(src.measure(exact, 2.5), exact + privacy.gaussian_noise(ref, 2.5, 12))
        assert src.select(scores, 0.7, 1.0) == privacy.exponential_mechanism(scores, 0.7, 1.0, ref)
        assert src.permute_and_flip(scores, 0.7, 1.0) == \
            privacy.report_noisy_max_exponential(scores, 0.7, 1.0, ref)
        a, released = src.noisy_fraction(0.25, 40, 0.01)
        a_ref = float(np.clip(0.25 + privacy.gaussian_noise(ref, 0.01, 1)[0], 0.0, 1.0))
        assert (a, released) == (a_ref, 40 * a_ref)


@pytest.mark.parametrize("std", [1.0, 3.5])
def test_discrete_gaussian_is_integer_with_variance_sigma_squared(std):
    noise = privacy.ReleaseNoise().gaussian(std, 100_000)
    assert noise.dtype == float and np.all(noise == np.round(noise))
    n = noise.size
    # mean 0 and variance std^2 (for std >= 1 the discrete Gaussian's variance is
    # std^2 to within 1e-8), each within 5 standard errors
    assert abs(noise.mean()) < 5 * std / math.sqrt(n)
    var_se = std ** 2 * math.sqrt(2.0 / (n - 1))
    assert abs(noise.var(ddof=1) - std ** 2) < 5 * var_se


def test_release_costs_are_the_ledger_formulas_according_to_opendp():
    src = privacy.ReleaseNoise()
    for std, l2 in [(1.0, 1.0), (2.5, math.sqrt(2.0)), (40.0, 1.0)]:
        assert src._gaussian_measurement(std).map(l2) == pytest.approx(
            privacy.gaussian_rho(std, l2), rel=1e-9)
    for eps, sens in [(0.3, 1.0), (2.0, 2.0), (1.1, 0.05)]:
        scale = 2.0 * sens / eps
        assert src._max_measurement("gumbel", scale).map(sens) == pytest.approx(
            privacy.exponential_rho(eps), rel=1e-9)
        assert src._max_measurement("exponential", scale).map(sens) == pytest.approx(eps, rel=1e-9)


def test_release_measure_keeps_counts_integer_and_refuses_fractions():
    src = privacy.ReleaseNoise()
    exact = np.array([0.0, 5.0, 1e6, 3.0])
    values = src.measure(exact, 2.0)
    assert values.shape == exact.shape and np.all(values == np.round(values))
    assert abs(values[2] - 1e6) < 20 * 2.0
    with pytest.raises(ConfigError, match="integer counts"):
        src.measure(np.array([1.5, 2.0]), 2.0)
    # counting queries (fractions of n): integer count, clipped to [0, n], scaled back
    for _ in range(20):
        a, released = src.noisy_fraction(3 / 7, 7, 0.5)
        assert float(released).is_integer() and 0 <= released <= 7 and a == released / 7


def test_release_selection_follows_the_exponential_mechanism():
    src = privacy.ReleaseNoise()
    scores = np.array([0.0, 1.0, 2.0, -np.inf])
    eps, sens, trials = 2.0, 1.0, 3000
    draws = np.array([src.select(scores, eps, sens) for _ in range(trials)])
    assert not (draws == 3).any()                      # -inf never wins
    p = privacy.exponential_probabilities(scores[:3], eps, sens)
    counts = np.bincount(draws, minlength=3)[:3]
    assert stats.chisquare(counts, p * trials).pvalue > 1e-4
    # permute-and-flip as report-noisy-max with exponential noise: its closed form
    # for two candidates is Pr[worse] = exp(-eps d / (2 Delta)) / 2
    two = np.array([1.0, 0.0])
    worse = np.mean([src.permute_and_flip(two, eps, sens) == 1 for _ in range(trials)])
    expected = math.exp(-eps / 2) / 2
    assert abs(worse - expected) < 5 * math.sqrt(expected * (1 - expected) / trials)


# -- runs ----------------------------------------------------------------------------------

def _charges(result):
    return [(c.round, c.step, c.mechanism, c.rho) for c in result.ledger.charges]


@pytest.mark.parametrize("mechanism,options", [("mwem-pgm", {}), ("pmw-pub", {}),
                                               ("gem", TINY_GEM)])
def test_release_charges_exactly_what_research_charges(mechanism, options):
    public = mechanism == "pmw-pub"
    research = tiny_run(mechanism, seed=0, public=public, **options)
    release = tiny_run(mechanism, seed=None, public=public, **options)
    assert release.report["privacy"]["mode"] == "release"
    assert research.report["privacy"]["mode"] == "research"
    assert _charges(release) == _charges(research)
    assert release.ledger.spent == research.ledger.spent
    assert [m.noise_std for m in release.measurements] == \
        [m.noise_std for m in research.measurements]
    assert np.all(private_values(release) == np.round(private_values(release)))
    check_release(release.report)


def test_jam_pgm_end_to_end_in_release_mode():
    sample = load_sample("titanic")
    synth = Synthesizer("jam-pgm", epsilon=1.0, workload="all-2way", rounds=2, seed=None,
                        fit_iters=10, final_fit_iters=20)
    # five public rows answer every marginal badly, so (unseeded) JAM-PGM all but
    # surely measures private marginals too
    result = synth.fit(sample.private, public=sample.public.head(5), schema=sample.schema)
    values = private_values(result)
    assert np.all(values == np.round(values))
    assert sum(c.step == "measure" for c in result.ledger.charges) == \
        sum(m.source == "private" for m in result.measurements)
    assert len(result.synthetic) == len(sample.private)
    assert result.ledger.spent <= result.ledger.total * (1 + 1e-12)
    priv = result.report["privacy"]
    assert priv["mode"] == "release" and "discrete Gaussian" in priv["noise"]
    assert "OpenDP" in priv["selection"] and "Gumbel-max" in priv["selection"]
    assert "Release mode" in priv["statement"] and "Research mode" not in priv["statement"]
    assert result.report["config"]["mode"] == "release"
    check_release(result.report)


def test_aim_end_to_end_in_release_mode_and_the_report_states_the_mode():
    release = tiny_run("aim", seed=None, rounds=6)
    values = private_values(release)
    assert values.size and np.all(values == np.round(values))
    assert release.ledger.spent == pytest.approx(release.ledger.total, rel=1e-9)
    assert "Release mode" in release.report["privacy"]["statement"]
    research = tiny_run("aim", seed=4, rounds=6)
    priv = research.report["privacy"]
    assert priv["mode"] == "research" and priv["noise"] == "continuous Gaussian (research mode)"
    assert "numpy" in priv["selection"] and "Research mode" in priv["statement"]
    assert research.report["config"]["mode"] == "research" and priv["seeded"]
    # research mode without a seed: still research, the OS seed is not released
    unseeded = tiny_run("aim", seed=None, mode="research", rounds=6)
    assert unseeded.report["privacy"]["mode"] == "research"
    assert "seed" not in unseeded.report["config"] and not unseeded.report["privacy"]["seeded"]
    assert "not released" in unseeded.report["privacy"]["statement"]
    # the seeds stay with the curator
    assert research.curator_record() == {**research.curator_record(), "seed": 4,
                                         "mode": "research", "seed_given": True}
    assert not unseeded.curator_record()["seed_given"]
    assert isinstance(unseeded.curator_record()["seed"], int)
    assert "the seed regenerates the noise" in research.curator_record()["label"]
    # a release-mode run's seed regenerates no noise, only the data-independent draws
    label = release.curator_record()["label"]
    assert "noise is not seeded" in label and "regenerates the noise" not in label
