"""Empirical privacy audit: lower bounds on epsilon from output frequencies.

A mechanism ``M`` is (epsilon, delta)-DP when, for every pair of neighbouring
inputs ``D, D'`` and every set of outputs ``S``,
``Pr[M(D) in S] <= exp(epsilon) Pr[M(D') in S] + delta``. Running ``M`` many
times on a fixed pair and counting how often each event ``S`` happens gives
Clopper-Pearson confidence intervals for both probabilities; then

    epsilon >= log((p1_lower - delta) / p2_upper)

holds with the chosen confidence. The bound is a *lower* bound on the true
privacy loss of the implementation: if it exceeds the claimed epsilon, the
claim is false (up to the stated confidence). Many events and both directions
are tried at once; a union (Bonferroni) bound over every one-sided interval
keeps the overall confidence.

The functions here are pure (numbers and numpy arrays in, numbers out), apart
from the samplers, which take a ``numpy.random.Generator`` and call the
project's own building blocks (:func:`synth_core.privacy.exponential_mechanism`,
:func:`synth_core.privacy.gaussian_noise`) or the engine with a real
mechanism. ``tests/test_audit.py`` runs a fast version; ``benchmarks/privacy_audit.py``
the long one. scipy (the ``test`` extra) is needed for the intervals.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from . import privacy

#: Confidence of every reported lower bound (all events and directions together).
DEFAULT_CONFIDENCE = 0.95


# --------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------

def clopper_pearson(hits, trials: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper-Pearson bounds at level ``1 - alpha`` each.

    Returns ``(lower, upper)``: ``Pr[p >= lower] >= 1 - alpha`` and
    ``Pr[p <= upper] >= 1 - alpha`` for a binomial proportion with ``hits``
    successes in ``trials``. ``hits`` may be an array.
    """
    from scipy.stats import beta

    if trials < 1:
        raise ValueError("Clopper-Pearson needs at least one trial.")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}.")
    k = np.asarray(hits, dtype=float)
    if np.any(k < 0) or np.any(k > trials):
        raise ValueError("hits must lie between 0 and trials.")
    with np.errstate(invalid="ignore"):
        lower = np.where(k > 0, beta.ppf(alpha, k, trials - k + 1), 0.0)
        upper = np.where(k < trials, beta.ppf(1 - alpha, k + 1, trials - k), 1.0)
    return lower, upper


@dataclass(frozen=True)
class AuditBound:
    """The best lower bound found, and which event gave it."""

    epsilon_lower: float     # max(0, best bound); 0 means "no evidence of any loss"
    event: int               # index of the event that gave it (-1: none)
    direction: str           # "D>D'" (event more likely on D) or "D'>D"
    hits: tuple[int, int]    # hits of that event on D and on D'
    trials: tuple[int, int]
    n_events: int
    confidence: float
    delta: float

    def to_json(self) -> dict:
        return asdict(self)


def epsilon_lower_bound(hits1: Sequence[int], trials1: int, hits2: Sequence[int], trials2: int,
                        *, delta: float, confidence: float = DEFAULT_CONFIDENCE) -> AuditBound:
    """High-confidence lower bound on epsilon from event counts on two neighbours.

    ``hits1[j]`` (``hits2[j]``) counts the runs on ``D`` (``D'``) whose output
    fell in event ``j``. Each event is tried in both directions
    (``log((p1_lo - delta) / p2_hi)`` and ``log((p2_lo - delta) / p1_hi)``);
    the ``4 m`` one-sided intervals share ``1 - confidence`` (union bound),
    so the reported maximum is a valid lower bound with probability at least
    ``confidence``.
    """
    h1 = np.asarray(hits1, dtype=np.int64)
    h2 = np.asarray(hits2, dtype=np.int64)
    if h1.shape != h2.shape or h1.ndim != 1 or h1.size == 0:
        raise ValueError("hits1 and hits2 must be non-empty 1-d arrays of the same length.")
    if not 0 <= delta < 1:
        raise ValueError(f"delta must lie in [0, 1), got {delta}.")
    alpha = (1.0 - confidence) / (4 * h1.size)
    lo1, hi1 = clopper_pearson(h1, trials1, alpha)
    lo2, hi2 = clopper_pearson(h2, trials2, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        forward = np.where((lo1 > delta) & (hi2 > 0), np.log((lo1 - delta) / hi2), -np.inf)
        backward = np.where((lo2 > delta) & (hi1 > 0), np.log((lo2 - delta) / hi1), -np.inf)
    best_f, best_b = int(np.argmax(forward)), int(np.argmax(backward))
    if forward[best_f] >= backward[best_b]:
        value, event, direction = float(forward[best_f]), best_f, "D>D'"
    else:
        value, event, direction = float(backward[best_b]), best_b, "D'>D"
    if not value > 0:
        return AuditBound(0.0, -1, "", (0, 0), (trials1, trials2), int(h1.size), confidence, delta)
    return AuditBound(value, event, direction, (int(h1[event]), int(h2[event])),
                      (trials1, trials2), int(h1.size), confidence, delta)


def outcome_counts(outputs1: np.ndarray, outputs2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts of every discrete output seen on either side (events ``{output = v}``)."""
    values = np.unique(np.concatenate([np.asarray(outputs1), np.asarray(outputs2)]))
    c1 = np.array([np.sum(outputs1 == v) for v in values], dtype=np.int64)
    c2 = np.array([np.sum(outputs2 == v) for v in values], dtype=np.int64)
    return c1, c2


def threshold_counts(outputs1: np.ndarray, outputs2: np.ndarray,
                     thresholds: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Counts of the events ``{x >= t}`` and ``{x < t}`` for every threshold ``t``.

    The thresholds must be fixed before looking at the outputs (they count
    towards the union bound, not fitted to the sample).
    """
    t = np.asarray(thresholds, dtype=float)
    s1, s2 = np.sort(np.asarray(outputs1, float)), np.sort(np.asarray(outputs2, float))
    below1 = np.searchsorted(s1, t, side="left")
    below2 = np.searchsorted(s2, t, side="left")
    return (np.concatenate([s1.size - below1, below1]).astype(np.int64),
            np.concatenate([s2.size - below2, below2]).astype(np.int64))


def claimed_epsilon(rho: float, delta: float) -> float:
    """The (epsilon, delta) claim implied by rho-zCDP (the project's exact conversion)."""
    return privacy.cdp_epsilon(rho, delta)


# --------------------------------------------------------------------------
# Building blocks on neighbouring inputs
# --------------------------------------------------------------------------

def em_neighbour_scores(candidates: int, sensitivity: float) -> tuple[np.ndarray, np.ndarray]:
    """Neighbouring score vectors, each score moving by exactly ``sensitivity``.

    ``D``: every score 0. ``D'``: candidate 0 gains ``sensitivity``, every
    other candidate loses it, which is the worst case for the event
    ``{output = 0}``: its probability ratio tends to ``exp(eps)`` as the
    number of candidates grows.
    """
    if candidates < 2:
        raise ValueError("The exponential-mechanism audit needs at least two candidates.")
    scores = np.zeros(candidates)
    shifted = np.full(candidates, -float(sensitivity))
    shifted[0] = float(sensitivity)
    return scores, shifted


def sample_exponential(scores: np.ndarray, eps: float, sensitivity: float, trials: int,
                       rng: np.random.Generator) -> np.ndarray:
    """``trials`` draws of :func:`privacy.exponential_mechanism` (the project's sampler)."""
    return np.fromiter((privacy.exponential_mechanism(scores, eps, sensitivity, rng)
                        for _ in range(trials)), dtype=np.int64, count=trials)


def audit_exponential(eps: float, *, trials: int, rng: np.random.Generator, candidates: int = 20,
                      sensitivity: float = 1.0, assumed_sensitivity: float | None = None,
                      delta: float = 0.0, confidence: float = DEFAULT_CONFIDENCE) -> AuditBound:
    """Audit the exponential mechanism with parameter ``eps`` (claim: ``eps``-DP).

    Scores move by ``sensitivity`` between the neighbours; the sampler is told
    ``assumed_sensitivity`` (default: the true one). A broken variant passes
    ``assumed_sensitivity = sensitivity / 2``.
    """
    told = sensitivity if assumed_sensitivity is None else assumed_sensitivity
    d1, d2 = em_neighbour_scores(candidates, sensitivity)
    out1 = sample_exponential(d1, eps, told, trials, rng)
    out2 = sample_exponential(d2, eps, told, trials, rng)
    h1 = np.bincount(out1, minlength=candidates)
    h2 = np.bincount(out2, minlength=candidates)
    return epsilon_lower_bound(h1, trials, h2, trials, delta=delta, confidence=confidence)


def gaussian_thresholds(shift: float, std: float, count: int = 24) -> np.ndarray:
    """A fixed grid of thresholds (in noise stds) for the Gaussian audit's tail events."""
    return shift / 2.0 + std * np.linspace(-4.0, 4.0, count)


def audit_gaussian(epsilon: float, delta: float, *, trials: int, rng: np.random.Generator,
                   sensitivity: float = 1.0, std_factor: float = 1.0, count: float = 10.0,
                   confidence: float = DEFAULT_CONFIDENCE) -> tuple[AuditBound, float]:
    """Audit the Gaussian measurement calibrated to ``(epsilon, delta)``.

    The budget is ``rho = rho_from_epsilon_delta(epsilon, delta)`` and the
    noise std ``gaussian_std(rho, sensitivity)`` (as a mechanism spending all
    of rho on one measurement). The count is ``count`` on ``D`` and
    ``count + sensitivity`` on ``D'``. ``std_factor < 1`` is a broken variant
    (less noise than the ledger is charged for). Returns the bound and the
    claim ``cdp_epsilon(rho, delta)`` (equal to ``epsilon`` up to bisection).
    """
    rho = privacy.rho_from_epsilon_delta(epsilon, delta)
    std = privacy.gaussian_std(rho, sensitivity) * std_factor
    # the project's sampler, vectorised: one call draws every trial's noise
    out1 = count + privacy.gaussian_noise(rng, std, trials)
    out2 = count + sensitivity + privacy.gaussian_noise(rng, std, trials)
    thresholds = count + gaussian_thresholds(sensitivity, std)
    h1, h2 = threshold_counts(out1, out2, thresholds)
    bound = epsilon_lower_bound(h1, trials, h2, trials, delta=delta, confidence=confidence)
    return bound, claimed_epsilon(rho, delta)


# --------------------------------------------------------------------------
# A tiny end-to-end mechanism (MWEM+PGM through the engine)
# --------------------------------------------------------------------------

def tiny_neighbours(n: int = 12, seed: int = 0):
    """Two tables over 3 binary columns: ``D'`` is ``D`` plus the record (1, 1, 1)
    (unbounded neighbours: add one record)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    base = pd.DataFrame({c: rng.integers(0, 2, n) for c in ("a", "b", "c")})
    plus = pd.concat([base, pd.DataFrame({"a": [1], "b": [1], "c": [1]})], ignore_index=True)
    return base, plus


def _broken_mwem(noise_divisor: float):
    from .mechanisms.mwem_pgm import MWEMPGM

    class BrokenMWEMPGM(MWEMPGM):
        """DELIBERATELY BROKEN (audit only): adds ``1/noise_divisor`` of the noise
        the ledger is charged for."""

        name = "mwem-pgm-broken"

        def plan(self, state):
            plan = super().plan(state)
            if plan is not None:
                plan.noise_std /= noise_divisor
            return plan

    return BrokenMWEMPGM


def sample_mwem_pgm(table, base, *, epsilon: float, delta: float, trials: int, seed: int,
                    rounds: int = 2, noise_divisor: float = 1.0) -> np.ndarray:
    """Run MWEM+PGM (unbounded DP, workload all-2way) ``trials`` times on ``table``.

    Returns one released number per run: the sum over every round's
    measurement of its noisy count of the all-ones cell minus the *base*
    table's count of that cell (a constant for each clique, so subtracting it
    is post-processing of the release). Every measured clique's all-ones cell
    holds the added record, so runs on ``D = base`` centre on 0 and runs on
    ``D' = base + (1, 1, 1)`` on ``rounds``: the sum gathers the whole
    measurement budget, which is what a likelihood-ratio test of the added
    record would use. The synthetic data is further output (the final fit is
    cut to one iteration to save time), so a bound from this number is a valid
    lower bound for the whole run. ``noise_divisor > 1`` runs the broken
    variant.
    """
    from .engine import Engine, PreparedData
    from .marginals import CodedTable
    from .mechanisms.mwem_pgm import MWEMPGM
    from .workload import parse_workload

    sizes = {"a": 2, "b": 2, "c": 2}
    data = PreparedData(CodedTable.from_frame(table, sizes), None)
    workload = parse_workload("all-2way", list(sizes))
    rho = privacy.rho_from_epsilon_delta(epsilon, delta)
    cls = MWEMPGM if noise_divisor == 1.0 else _broken_mwem(noise_divisor)
    out = np.zeros(trials)
    for i in range(trials):
        engine = Engine(cls(rounds=rounds), data, workload, rho=rho,
                        neighbours=privacy.Neighbours.UNBOUNDED, seed=[seed, i],
                        fit_iters=5, final_fit_iters=1)
        for _event in engine.rounds():
            pass
        measured = [m for m in engine.state.measurements if m.round > 0]
        assert len(measured) == rounds, "MWEM+PGM measures once per round"
        for m in measured:
            cell = int(np.ravel_multi_index((1,) * len(m.clique), (2,) * len(m.clique)))
            reference = int((base[list(m.clique)] == 1).all(axis=1).sum())
            out[i] += m.values[cell] - reference
    return out


def audit_mwem_pgm(epsilon: float, delta: float, *, trials: int, seed: int = 0,
                   noise_divisor: float = 1.0, confidence: float = DEFAULT_CONFIDENCE,
                   n: int = 12) -> tuple[AuditBound, float]:
    """Audit MWEM+PGM (3 binary columns, 2 rounds) on add/remove-one neighbours.

    Events are the tails of the summed centred counts (see
    :func:`sample_mwem_pgm`) at thresholds fixed in advance (in units of the
    sum's noise std for the variant). Returns the bound and the claim
    ``cdp_epsilon(rho, delta)``.
    """
    base, plus = tiny_neighbours(n)
    rho = privacy.rho_from_epsilon_delta(epsilon, delta)
    rounds = 2
    per_round = privacy.gaussian_std(rho / (2 * rounds), 1.0) / noise_divisor
    shift, std = float(rounds), per_round * np.sqrt(rounds)
    out1 = sample_mwem_pgm(base, base, epsilon=epsilon, delta=delta, trials=trials, seed=seed,
                           rounds=rounds, noise_divisor=noise_divisor)
    out2 = sample_mwem_pgm(plus, base, epsilon=epsilon, delta=delta, trials=trials,
                           seed=seed + 1, rounds=rounds, noise_divisor=noise_divisor)
    h1, h2 = threshold_counts(out1, out2, gaussian_thresholds(shift, std))
    bound = epsilon_lower_bound(h1, trials, h2, trials, delta=delta, confidence=confidence)
    return bound, claimed_epsilon(rho, delta)
