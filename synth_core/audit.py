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

Selection audit (:func:`audit_selection`)
-----------------------------------------

It audits the privacy loss of AIM's and JAM-PGM's *selection* step end to
end: the real mechanism runs through the engine (research mode, a fresh seed
per run) until round 1 has selected and measured, and the released output
audited is which candidate round 1 picked. The claim is the epsilon the
ledger charged that selection: the exponential mechanism with parameter
``eps`` over scores of sensitivity ``Delta`` is ``eps``-DP (pure, delta 0),
and its charge ``rho = eps^2 / 8`` gives back ``eps = sqrt(8 rho)``.

*Table.* Five pairs of binary columns ``(a_j, b_j)``, 200 records; every
``a_j`` alternates 0, 1 and ``b_j = a_j`` except on the pair's off-diagonal
rows: 21 for the target pair ``A = (a0, b0)``, 20 for each rival
``B_j``. The workload is the five pairs (weight 1), so the candidates are the
pairs and the ten 1-way marginals.

*Scores.* Before round 1 the model is a product of 1-way marginals (AIM: fitted
to its noisy 1-ways; JAM-PGM: uniform, total ``n``). On a pair the data
exceed the model on the diagonal (about 90 against 50 per cell) and fall
below it off the diagonal (about 10), by far more than the 1-ways' noise
(std 0.67 at eps 1), so with signs ``s = +1`` on the diagonal and ``-1`` off
it, ``||M_r(D) - M_r(p)||_1 = sum s (M_r(D) - M_r(p)) = n - 2 off_r -
N (q_a0 - q_a1)(q_b0 - q_b1)``; the last term is the model's imbalance
squared, with ``N`` the model's total (every column is balanced to within a
record), and vanishes. The
error, hence the score, is a function of the data only. The 1-way candidates
score near zero against about 300 for the pairs and are never picked.

*One record flips the pick.* AIM's score is ``w_r (error - sqrt(2/pi) std
n_r)`` with ``w_r = 2`` for every pair; its selection logit is ``eps score /
(2 Delta)``.

* AIM, unbounded (``Delta = max w_r = 2``): ``D' = D`` plus a record on
  ``A``'s diagonal and every rival's off-diagonal (:func:`flipping_record`).
  ``A``'s error rises by 1, each rival's falls by 1: the logit of ``A``
  against each rival goes from ``eps (off_B - off_A) = -eps`` to 0, a move of
  the whole ``eps`` (errors differ by even numbers, so no record flips the
  sign exactly).
* AIM, bounded (``Delta = 2 max w_r = 4``): ``D'`` replaces row 0 (off
  ``A``'s diagonal, on every rival's) by that record: ``A``'s error rises by 2,
  each rival's falls by 2, the logit goes from ``-eps/2`` to ``+eps/2``: on
  ``D`` ``A`` trails every rival by ``Delta``, on ``D'`` it leads by ``Delta``.
* JAM-PGM, bounded (``Delta = 4``; JAM-PGM refuses unbounded DP): the public
  rows are ``D`` with row 0's target pair moved onto the diagonal. The
  target is ``A``'s public-row candidate, scored ``error - ||M_A(D) -
  M_A(public)||_1``: on ``D'`` ``A``'s error rises by 2 and its proxy error
  falls from 2 to 0 (+4), each rival's public candidate moves by -4; the gap
  goes from -4 to +4, logits ``-eps/2`` to ``+eps/2``. The private candidates
  move by only 2, which costs JAM-PGM's event some of its loss.

Every score moves by at most ``Delta``, so no event's probability ratio can
exceed ``e^eps``; it approaches ``e^eps`` when the target is unlikely on
``D``. Four tied rivals put ``Pr_D[target]`` near 0.08-0.13, where the
expected Clopper-Pearson bound at 10^4 runs per side is highest (more rivals
raise the event's loss and the trials it needs).

*Events and confidence.* "round 1 picked the target" and its complement,
fixed before sampling, each in both directions: 8 one-sided intervals share
``1 - confidence`` (95%), so ``epsilon_lower`` is a lower bound on the
selection's loss with probability at least 95%. Above the charged epsilon,
the charge is wrong: e.g. a sensitivity four times too small (AIM's ``2 max
w_r`` written ``0.5 max w_r``, JAM-PGM's 4 written 1) makes the logits four
times as steep, the selection ``4 eps``-DP at the price of ``eps``.

*Round 0 (AIM).* AIM's initial 1-way measurements reach round 1 only through
the scores. Each run keeps its exact ``Pr[target | its scores]`` (from the
curator-only scores); :func:`round0_spread` is the largest log-ratio of that
probability (or its complement) between runs of one side. Given the same
round-0 output the two sides' probabilities differ by at most ``e^eps`` (the
model, hence the scores' model part, is then the same), so over the round-0
outputs seen the event's loss is at most ``eps + 2 round0_spread`` (the
spread is at most 0.06 over 10^4 honest runs: the imbalance term above and
the fit's tolerance); a bound between ``eps`` and that would need a closer
look, not a verdict. ``event_epsilon``, the exact loss of the event from
the average of those probabilities, is what the bound tends to as the
trials grow; its ratio to the charged epsilon says how close to the worst
case the construction is (0.86 AIM unbounded, 0.80 AIM bounded, 0.74
JAM-PGM). :func:`expected_selection_bound` gives the bound at a trial count
before sampling.
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

def _deliberately_broken(base: type, field: str, divisor: float, what: str) -> type:
    """A subclass of the mechanism ``base`` whose every round plan has its
    ``field`` divided by ``divisor``; the ledger charges what ``base`` would.
    DELIBERATELY BROKEN (audit only): ``what`` says how."""

    def plan(self, state):
        out = base.plan(self, state)
        if out is not None:
            setattr(out, field, getattr(out, field) / divisor)
        return out

    return type(f"Broken{base.__name__}", (base,),
                {"name": f"{base.name}-broken", "plan": plan, "__doc__": what})


def tiny_neighbours(n: int = 12, seed: int = 0):
    """Two tables over 3 binary columns: ``D'`` is ``D`` plus the record (1, 1, 1)
    (unbounded neighbours: add one record)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    base = pd.DataFrame({c: rng.integers(0, 2, n) for c in ("a", "b", "c")})
    plus = pd.concat([base, pd.DataFrame({"a": [1], "b": [1], "c": [1]})], ignore_index=True)
    return base, plus


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
    cls = MWEMPGM if noise_divisor == 1.0 else _deliberately_broken(
        MWEMPGM, "noise_std", noise_divisor,
        f"adds 1/{noise_divisor:g} of the noise the ledger is charged for")
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


# --------------------------------------------------------------------------
# End-to-end selection audit: one record flips AIM's / JAM-PGM's first pick
# --------------------------------------------------------------------------

#: Pairs of binary columns ``(a_j, b_j)`` in the selection audit's table: the
#: target pair ``j = 0`` and four rivals (the module docstring).
SELECTION_PAIRS = 5
#: Records of ``D``.
SELECTION_ROWS = 200
#: Off-diagonal records of every rival pair; the target pair has one more.
SELECTION_OFF_DIAGONAL = 20
#: Every run's selection parameter (the epsilon the selection step is charged).
SELECTION_EPSILON = 1.0
#: Mechanisms the selection audit runs, and the relations each is defined under.
SELECTION_MECHANISMS = {"aim": ("bounded", "unbounded"), "jam-pgm": ("bounded",)}


def pair_cliques(pairs: int = SELECTION_PAIRS) -> list[tuple[str, str]]:
    """The workload of the selection audit: the marginals ``(a_j, b_j)``, weight 1 each."""
    return [(f"a{j}", f"b{j}") for j in range(pairs)]


def pair_table(rows: int = SELECTION_ROWS, off: int = SELECTION_OFF_DIAGONAL,
               pairs: int = SELECTION_PAIRS):
    """``D``: every ``a_j`` alternates 0, 1; ``b_j = a_j`` except on the off-diagonal rows.

    The target pair's off-diagonal rows are ``0 .. off`` (``off + 1`` rows,
    row 0 among them); a rival's are the last ``off`` rows. So row 0 is
    ``(a=0, b=1)`` on the target and on the diagonal of every rival, and every
    column is balanced to within one record.
    """
    import pandas as pd

    if rows < 4 * (off + 2) or off % 2:
        raise ValueError("pair_table needs an even off-diagonal count well below rows / 4.")
    a = np.arange(rows) % 2
    cols = {}
    for j in range(pairs):
        flipped = np.arange(off + 1) if j == 0 else np.arange(rows - off, rows)
        b = a.copy()
        b[flipped] = 1 - b[flipped]
        cols[f"a{j}"], cols[f"b{j}"] = a.copy(), b
    return pd.DataFrame(cols)


def flipping_record(pairs: int = SELECTION_PAIRS) -> dict[str, int]:
    """The record that moves the target up and every rival down: on the target's
    diagonal ``(0, 0)``, on every rival's off-diagonal ``(0, 1)``."""
    record = {}
    for j in range(pairs):
        record[f"a{j}"], record[f"b{j}"] = 0, (0 if j == 0 else 1)
    return record


@dataclass(frozen=True)
class SelectionDesign:
    """Neighbouring private tables ``D``, ``D'``, the public rows (JAM-PGM) and the target."""

    neighbours: "privacy.Neighbours"
    private: object        # pandas.DataFrame, D
    neighbour: object      # pandas.DataFrame, D'
    public: object         # pandas.DataFrame: public rows (read by JAM-PGM only)
    cliques: tuple
    target: tuple
    #: the target's source: JAM-PGM's public-row candidate moves by the whole
    #: sensitivity 4, its private one by 2; AIM's candidates are all private
    target_source: str


def selection_design(neighbours, mechanism: str, pairs: int = SELECTION_PAIRS,
                     rows: int = SELECTION_ROWS,
                     off: int = SELECTION_OFF_DIAGONAL) -> SelectionDesign:
    """The neighbours of the selection audit (see :func:`audit_selection`).

    Unbounded: ``D' = D`` plus :func:`flipping_record`. Bounded: ``D'`` is
    ``D`` with row 0 (target off-diagonal, rivals diagonal) replaced by that
    record. The public rows (used by JAM-PGM only) are ``D`` with row 0's
    target pair moved onto the diagonal, i.e. they agree with ``D'`` on the
    target pair and with ``D`` on every rival.
    """
    import pandas as pd

    neighbours = privacy.Neighbours.parse(neighbours)
    base = pair_table(rows, off, pairs)
    record = flipping_record(pairs)
    if neighbours.n_is_public:
        other = base.copy()
        other.loc[0, list(record)] = list(record.values())
    else:
        other = pd.concat([base, pd.DataFrame([record])], ignore_index=True)
    public = base.copy()
    public.loc[0, "b0"] = public.loc[0, "a0"]
    cliques = tuple(pair_cliques(pairs))
    source = "public" if mechanism == "jam-pgm" else "private"
    return SelectionDesign(neighbours, base, other, public, cliques, cliques[0], source)


def selection_mechanism(name: str, factor: float = 1.0, epsilon: float = SELECTION_EPSILON):
    """``(mechanism, rho)``: AIM or JAM-PGM with their default schedules, and
    the run budget whose first selection has parameter ``epsilon``.

    AIM (``T = 16 d`` rounds) selects with ``eps = sqrt(8 * 0.1 * rho / T)``;
    JAM-PGM (30 rounds, no public columns, so no initial measurement) with
    ``eps = sqrt(8 * 0.2 * rho / 30)``. ``factor > 1`` divides the plan's
    score sensitivity by ``factor``: the selection then runs at ``factor``
    times the charged epsilon.
    """
    from .mechanisms.aim import AIM, AIM_MEASURE_SHARE
    from .mechanisms.jam_pgm import JAM_DEFAULT_ROUNDS, JAM_MEASURE_SHARE, JAMPGM

    per_round = privacy.exponential_rho(epsilon)
    if name == "aim":
        cls, rounds = AIM, 16 * 2 * SELECTION_PAIRS
        rho = rounds * per_round / (1 - AIM_MEASURE_SHARE)
    elif name == "jam-pgm":
        cls, rounds = JAMPGM, JAM_DEFAULT_ROUNDS
        rho = rounds * per_round / (1 - JAM_MEASURE_SHARE)
    else:
        raise ValueError(f"The selection audit runs aim or jam-pgm, not {name!r}.")
    if factor != 1.0:
        cls = _deliberately_broken(cls, "sensitivity", factor,
                                   f"selects with 1/{factor:g} of the score sensitivity")
    return cls(rounds=rounds), rho


@dataclass(frozen=True)
class FirstSelection:
    """What the audit keeps of one run: the round-1 pick and the exact (curator) facts."""

    on_target: bool             # round 1 picked the target (clique and source)
    target_probability: float   # exact Pr[target] given this run's round-1 scores
    charged_epsilon: float      # sqrt(8 rho_select) of the ledger's round-1 selection charge


def first_selection(engine, target, source: str) -> FirstSelection:
    """Run ``engine`` until its first selection has been measured and stop there."""
    rounds = engine.rounds()
    try:
        event = next(ev for ev in rounds if ev.round == 1)
    finally:
        rounds.close()
    plan = engine.last_selection[1]
    cur = event.curator
    scores = np.asarray(cur.scores)
    on_target = np.array([(c.clique, c.source) == (tuple(target), source)
                          for c in cur.candidates])
    probs = privacy.exponential_probabilities(scores, plan.epsilon, plan.sensitivity)
    rho_select = next(c.rho for c in engine.ledger.charges if c.round == 1 and c.step == "select")
    return FirstSelection((event.clique, event.source) == (tuple(target), source),
                          float(probs[on_target].sum()),
                          privacy.exponential_eps(rho_select))


def selection_engine(design: SelectionDesign, table, mechanism: str, seed, *,
                     factor: float = 1.0, epsilon: float = SELECTION_EPSILON):
    """An engine running the real mechanism on ``table`` (research mode, ``seed``)."""
    from .engine import Engine, PreparedData
    from .marginals import CodedTable
    from .workload import explicit

    sizes = {c: 2 for c in table.columns}
    public = CodedTable.from_frame(design.public, sizes) if mechanism == "jam-pgm" else None
    data = PreparedData(CodedTable.from_frame(table, sizes), public)
    workload = explicit(list(sizes), [list(cl) for cl in design.cliques])
    mech, rho = selection_mechanism(mechanism, factor, epsilon)
    return Engine(mech, data, workload, rho=rho, neighbours=design.neighbours, seed=seed,
                  mode="research")


def sample_first_selections(design: SelectionDesign, table, mechanism: str, *, trials: int,
                            seed, factor: float = 1.0,
                            epsilon: float = SELECTION_EPSILON) -> list[FirstSelection]:
    """``trials`` runs of the real mechanism on ``table`` through the engine
    (research mode, seed ``[*seed, i]`` for run ``i``), each stopped after round 1."""
    return [first_selection(selection_engine(design, table, mechanism, [*seed, i],
                                             factor=factor, epsilon=epsilon),
                            design.target, design.target_source)
            for i in range(trials)]


@dataclass(frozen=True)
class SelectionAudit:
    """The selection audit of one mechanism, relation and variant."""

    mechanism: str
    neighbours: str
    factor: float               # selection runs at factor x the charged epsilon (1: honest)
    trials: int                 # runs on each of D and D'
    charged_epsilon: float      # what the ledger charged round 1's selection, as pure DP
    bound: AuditBound           # the audit's lower bound (events: target picked or not)
    target_probability: tuple[float, float]  # exact Pr[target] on D and on D' (curator scores)
    event_epsilon: float        # the event's exact loss, the limit of the bound as trials grow
    round0_spread: float        # how far round 0's noise moves log Pr[target] (or its complement)

    @property
    def flagged(self) -> bool:
        return self.bound.epsilon_lower > self.charged_epsilon

    def to_json(self) -> dict:
        out = asdict(self)
        out["flagged"] = self.flagged
        return out


def audit_selection(mechanism: str, neighbours, *, trials: int, seed: int = 0,
                    factor: float = 1.0, epsilon: float = SELECTION_EPSILON,
                    confidence: float = DEFAULT_CONFIDENCE) -> SelectionAudit:
    """Audit the first selection of AIM or JAM-PGM end to end (the module docstring).

    ``trials`` runs on each of ``D`` and ``D'``; the events are "round 1
    picked the target clique" and its complement, fixed before sampling;
    delta is 0 because the claim is the exponential mechanism's pure
    ``epsilon``-DP.
    """
    design = selection_design(neighbours, mechanism)
    runs = [sample_first_selections(design, table, mechanism, trials=trials, seed=(seed, side),
                                    factor=factor, epsilon=epsilon)
            for side, table in enumerate((design.private, design.neighbour))]
    hits = [sum(r.on_target for r in side) for side in runs]
    bound = epsilon_lower_bound([hits[0], trials - hits[0]], trials,
                                [hits[1], trials - hits[1]], trials,
                                delta=0.0, confidence=confidence)
    charged = {round(r.charged_epsilon, 12) for side in runs for r in side}
    if len(charged) != 1:
        raise AssertionError(f"round 1's selection charge varies between runs: {charged}")
    p = [float(np.mean([r.target_probability for r in side])) for side in runs]
    return SelectionAudit(mechanism, design.neighbours.value, float(factor), trials,
                          charged.pop(), bound, (p[0], p[1]), event_epsilon(p[0], p[1]),
                          max(round0_spread([r.target_probability for r in side]) for side in runs))


def event_epsilon(p1: float, p2: float) -> float:
    """Exact privacy loss of the pair of events {target}, {not target} with
    probabilities ``p1`` on ``D`` and ``p2`` on ``D'``: the largest absolute
    log-ratio, which the audit's bound approaches as the trials grow."""
    return float(max(abs(np.log(p2 / p1)), abs(np.log((1 - p2) / (1 - p1)))))


def round0_spread(probabilities) -> float:
    """``max(log max/min Pr[target], log max/min Pr[not target])`` over the runs on one side.

    Each run's exact ``Pr[target]`` given its round-1 scores; round 0's noise is
    the only thing that differs between the runs, so this is how much AIM's
    initial measurements can change either event's probability.
    """
    p = np.asarray(probabilities, dtype=float)
    with np.errstate(divide="ignore"):
        return float(max(np.ptp(np.log(p)), np.ptp(np.log1p(-p))))


def expected_selection_bound(p1: float, p2: float, trials: int, *, sds: float = 0.0,
                             confidence: float = DEFAULT_CONFIDENCE) -> float:
    """The audit's bound when the target's hits are their expectations ``p1
    trials`` on ``D`` and ``p2 trials`` on ``D'``, each moved ``sds`` binomial
    standard deviations towards the other (``sds = 3``: a pessimistic draw).
    For choosing the trial count before sampling."""
    towards = np.sign(p2 - p1)
    h1, h2 = (int(np.clip(round(p * trials + sign * sds * np.sqrt(trials * p * (1 - p))),
                          0, trials))
              for p, sign in ((p1, towards), (p2, -towards)))
    return epsilon_lower_bound([h1, trials - h1], trials, [h2, trials - h2], trials,
                               delta=0.0, confidence=confidence).epsilon_lower
