"""Plain-language notes on a run's numbers, with the run's own figures.

Every function takes what a run produced (its report, round events, curator
diagnostics) and returns text or a table; nothing here draws or imports
Streamlit. The notes:

* :func:`number_notes`: epsilon, delta, rho and the neighbour relation;
* :func:`selection_probabilities` / :func:`pool_frame` / :func:`selection_note`:
  the chance of each candidate under the noisy selection, computed by
  :func:`synth_core.privacy.exponential_probabilities` with the round's own
  ``epsilon`` and score sensitivity, the exact distribution of the
  exponential mechanism the engine samples from
  (``Pr[i] = exp(eps s_i / (2 Delta)) / sum_j exp(eps s_j / (2 Delta))``);
  CURATOR-ONLY, like the exact scores it is computed from;
* :func:`unspent_note`: why budget was left, with the rounds that picked
  public marginals at zero measurement cost;
* :func:`baseline_note`: whether the synthetic data beat the public rows alone
  (CURATOR-ONLY figures);
* :func:`compare_note`: a comparison's outcome, a clause per epsilon: the
  lowest mean workload error, whether the seeds' ranges leave its lead in
  doubt, and the epsilons at which nothing beat the public rows alone
  (CURATOR-ONLY figures);
* :func:`is_vacuous` / :func:`bounds_display_frame`: an uncertainty bound at
  the largest possible error (L1 distance 2 between two share vectors, 2n in
  counts) carries no information and is shown as such;
  :func:`bounds_summary` counts the bounds and why the others are missing.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .engine import PRIVATE, RoundEvent
from .privacy import cdp_epsilon, exponential_probabilities
from .uncertainty import bounds_frame

#: the largest L1 distance between two share vectors (bound / n at or above it says nothing)
MAX_L1 = 2.0
#: relative slack for "at the largest possible error" (a bound capped at 2n is exactly 2)
VACUOUS_TOLERANCE = 1e-9
NO_INFORMATION = "no information (the bound is the largest possible error)"


# -- epsilon, delta, rho, neighbours ------------------------------------------------------

def number_notes(report: Mapping) -> dict[str, str]:
    """``{"epsilon", "delta", "rho", "neighbours"}`` -> a note with this run's figures."""
    p = report["privacy"]
    n = (report.get("data") or {}).get("n")
    return setting_notes(p["epsilon"], p["delta"], p["rho"], p["neighbours"], n, p["rho_spent"])


def setting_notes(epsilon: float, delta: float, rho: float, neighbours: str, n: int | None,
                  spent: float | None = None) -> dict[str, str]:
    """The notes of :func:`number_notes` from the figures themselves (``spent``:
    what a run spent, ``None`` before it ran)."""
    return {"epsilon": epsilon_note(epsilon, delta, neighbours), "delta": delta_note(delta, n),
            "rho": rho_note(rho, epsilon, delta, spent),
            "neighbours": neighbours_note(neighbours, n)}


#: what one person's record may do between the two tables a guarantee compares
NEIGHBOUR_CHANGE = {"bounded": "if one person's record were replaced by any other record",
                    "unbounded": "whether or not one person's record is in the table"}


def epsilon_note(epsilon: float, delta: float, neighbours: str = "bounded") -> str:
    """What ``epsilon`` promises under the run's neighbour relation: the probability
    of any set of outputs changes by at most a factor ``e^epsilon``, plus ``delta``."""
    factor = math.exp(epsilon) if epsilon < 700 else math.inf
    return (f"ε = {epsilon:g}: {NEIGHBOUR_CHANGE[neighbours]}, the chance of any output "
            f"would change by at most a factor e^ε = {factor:.3g} (plus the small additive "
            f"slack δ = {delta:g}). Smaller ε is more private and noisier; 0.1 to 10 is the "
            f"usual range.")


def delta_note(delta: float, n: int | None) -> str:
    """What ``delta`` allows, against ``1/n`` when ``n`` is public."""
    against = (f" Here 1/n = {1 / n:.2g} (n = {n:,}), so δ is {1 / (n * delta):.3g} times "
               f"smaller than one record's share." if n else "")
    return (f"δ = {delta:g}: the additive slack in the ε promise: the chance of any output may "
            f"exceed e^ε times its chance on the other table by at most δ. It must be far below "
            f"1/n, the chance of picking one record at random (a mechanism that published one "
            f"random record would meet δ = 1/n)." + against)


def rho_note(rho: float, epsilon: float, delta: float, spent: float | None = None) -> str:
    """``rho`` as the zCDP budget of ``(epsilon, delta)``, and what was spent of it."""
    text = (f"ρ = {rho:.4g} is the zCDP budget equivalent to ε = {epsilon:g}, δ = {delta:g} "
            f"(the largest ρ whose exact conversion gives at most that δ). Every selection and "
            f"measurement is charged in ρ and the charges add up")
    if spent is None:
        return text + "; a run never spends more than ρ."
    eps_spent = cdp_epsilon(spent, delta) if spent > 0 else 0.0
    share = spent / rho if rho > 0 else 0.0
    return text + (f": this run spent ρ = {spent:.4g} of {rho:.4g} ({share:.0%}), worth "
                   f"ε = {eps_spent:.3g} at this δ.")


def neighbours_note(neighbours: str, n: int | None) -> str:
    """The neighbour relation: what one person's record can change."""
    if neighbours == "bounded":
        size = f" (n = {n:,})" if n else ""
        return ("Bounded neighbours (replace one record): the guarantee compares tables that "
                f"differ in one record's values; the number of records{size} is public. "
                "Replacing a record moves one count of a marginal to another cell: an L1 change "
                "of 2 (L2 √2), which sets the noise scale.")
    return ("Unbounded neighbours (add or remove one record): the guarantee also hides whether "
            "a person is in the table, so n is not released. Adding a record changes one count "
            "of a marginal by 1 (L1 and L2 sensitivity 1).")


# -- the noisy selection --------------------------------------------------------------------

def selection_probabilities(event: RoundEvent) -> np.ndarray | None:
    """CURATOR-ONLY: each candidate's probability of being chosen in ``event``'s round,
    ``softmax(epsilon * score / (2 * sensitivity))`` with the round's own parameters;
    ``None`` when the round was no exponential-mechanism selection over marginals."""
    cur = event.curator
    if cur is None or cur.sensitivity is None or event.epsilon is None:
        return None
    return exponential_probabilities(np.asarray(cur.scores), event.epsilon, cur.sensitivity)


def pool_frame(event: RoundEvent) -> pd.DataFrame | None:
    """CURATOR-ONLY: the candidate pool with exact score and selection probability,
    best score first (``probability`` is empty when the round has none)."""
    cur = event.curator
    if cur is None:
        return None
    probs = selection_probabilities(event)
    rows = [{"marginal": " × ".join(c.clique), "source": c.source, "score": s,
             "probability": None if probs is None else float(probs[i]), "chosen": i == cur.chosen}
            for i, (c, s) in enumerate(zip(cur.candidates, cur.scores))]
    return pd.DataFrame(rows).sort_values("score", ascending=False, ignore_index=True)


def selection_note(event: RoundEvent) -> str | None:
    """CURATOR-ONLY: why a low-scoring candidate may be chosen, with the round's numbers."""
    probs = selection_probabilities(event)
    if probs is None:
        return None
    cur = event.curator
    scores = np.asarray(cur.scores)
    best, chosen = int(np.argmax(scores)), cur.chosen
    step = 2.0 * cur.sensitivity / event.epsilon
    name = lambda i: " × ".join(cur.candidates[i].clique)  # noqa: E731
    text = (f"The choice is random on purpose (exponential mechanism, ε_sel = "
            f"{event.epsilon:.3g}, score sensitivity {cur.sensitivity:g}): each candidate's "
            f"probability is proportional to exp(ε_sel · score / (2 · {cur.sensitivity:g})), so "
            f"a score higher by {step:.3g} makes a candidate e ≈ 2.7 times as likely. "
            f"The best score ({name(best)}, {scores[best]:.3g}) had probability "
            f"{probs[best]:.1%}")
    if chosen == best:
        return text + "; it was chosen."
    gap = scores[best] - scores[chosen]
    at_most = float(probs[scores <= scores[chosen]].sum())
    return (text + f"; the chosen candidate ({name(chosen)}, score {scores[chosen]:.3g}) had "
            f"{probs[chosen]:.1%}, {gap:.3g} below the best ({gap / step:.2g} steps). Many "
            f"unlikely candidates add up: those scoring no more than the chosen one had "
            f"{at_most:.1%} together.")


# -- unspent budget --------------------------------------------------------------------------

def public_rounds(events: Sequence[RoundEvent]) -> list[RoundEvent]:
    """Rounds that selected a marginal answered without noise (public rows or columns)."""
    return [e for e in events if e.epsilon is not None and e.source != PRIVATE]


#: public rounds :func:`unspent_note` names one by one (the rest are counted)
UNSPENT_ROUNDS_LISTED = 5


def unspent_note(events: Sequence[RoundEvent], total: float, spent: float,
                 listed: int = UNSPENT_ROUNDS_LISTED) -> str | None:
    """Why ``total - spent`` was left, or ``None`` when (nearly) all was spent
    (``listed``: how many public picks to name; 0 for a one-line summary).

    A round that picks a public marginal pays its selection (``rho_select``)
    and no measurement: the measurement it had planned
    (``curator.rho_measure_planned``) stays in the budget.
    """
    left = total - spent
    if total <= 0 or left <= 1e-6 * total:
        return None
    head = f"ρ = {left:.4g} of {total:.4g} ({left / total:.0%}) was left unspent."
    picks = public_rounds(events)
    if spent == 0 and not picks:
        return head + " The mechanism measured nothing from the private table, so it spent nothing."
    if not picks:
        return head + (" The mechanism stopped before using all of it (its stopping rule, or "
                       "the run was stopped); unspent budget is privacy not given away.")
    parts = []
    for e in picks:
        planned = e.curator.rho_measure_planned if e.curator is not None else None
        cost = f", measuring a private one would have cost ρ = {planned:.3g}" \
            if planned is not None else ""
        parts.append(f"round {e.round} ({' × '.join(e.cliques[0])}; selection ρ = "
                     f"{e.rho_select:.3g}{cost})")
    last = [e for e in events if e.epsilon is not None][-1]
    tail = ""
    if last in picks and last.curator is not None and last.curator.rho_measure_planned:
        tail = (f" A public pick passes its planned measurement on to the later rounds; the "
                f"last round (round {last.round}) had none to pass it to, so its "
                f"ρ = {last.curator.rho_measure_planned:.4g} stayed unspent.")
    if len(parts) > listed:   # a long run: the first few, the table has all
        parts = parts[:listed] + ([f"and {len(parts) - listed} more (the round table lists "
                                   "every one)"] if listed else [])
    listing = (": " + "; ".join(parts)) if parts else ""
    return (head + f" {len(picks)} round(s) picked a public marginal, answered from public "
            f"data at zero measurement cost{listing}." + tail +
            " Unspent budget is privacy not given away.")


# -- against the public rows alone -----------------------------------------------------------

def workload_error_help(n_marginals: int, of: str = "the synthetic data") -> str:
    """What the workload error of ``of`` is, on its 0-2 scale."""
    return (f"The average, over the workload's {n_marginals} marginals, of the L1 distance "
            f"between the real shares of each cell and those of {of}. 0 is a perfect match, 2 "
            "the worst possible; half of it is the share of the probability mass in the wrong "
            "cells (an error of 0.3 means 15%).")


#: a lead over the public rows below this share of their error is said to be one run's:
#: JAM-PGM's three seeds on the JAM paper's Titanic split spread by 4% of their mean
#: error at epsilon 1 and 43% at 0.1 (benchmarks/results/jam_titanic/runs.jsonl)
CLOSE_GAP = 0.10


def baseline_note(mechanism: str, epsilon: float, workload_error: float,
                  proxy_error: float | None, title: str | None = None) -> tuple[bool, str] | None:
    """CURATOR-ONLY: ``(beats, text)``: whether the synthetic data beat the public rows
    alone on the workload; ``None`` without public rows (or for public-only itself).
    ``title`` names the run's mechanism in the text ("Conditional AIM"; default ``mechanism``)."""
    if proxy_error is None or mechanism == "public-only":
        return None
    mechanism = title or mechanism
    if workload_error < proxy_error:
        gain = (proxy_error - workload_error) / proxy_error if proxy_error > 0 else 0.0
        close = (" This is one run: a gap this small can turn round with another seed "
                 "(the Compare page runs several)." if gain < CLOSE_GAP else "")
        return True, (f"{mechanism} beats the public rows alone: workload error "
                      f"{workload_error:.3f} against {proxy_error:.3f} ({gain:.0%} lower)."
                      + close)
    return False, (f"At ε = {epsilon:g}, {mechanism}'s synthetic data (workload error "
                   f"{workload_error:.3f}) does not beat the public rows alone "
                   f"({proxy_error:.3f}): releasing the public rows themselves (the "
                   "Public-only baseline, no budget) would do as well on this workload. What would "
                   "help: more epsilon (the noise shrinks as 1/√ρ), fewer marginals (a smaller "
                   "workload leaves more budget for each), or another mechanism (compare "
                   "several on the same table).")


def compare_note(summary: pd.DataFrame, labels: Mapping[str, str] | None = None,
                 reference: float | None = None) -> str | None:
    """CURATOR-ONLY: a comparison's outcome (``summary``: :func:`synth_core.charts.compare_summary`,
    one row per mechanism and epsilon with the mean, smallest and largest error over the
    seeds and the runs), one clause per epsilon: the mechanism with the lowest mean error
    and the next one, called level when their ranges over the seeds overlap. With one
    run of a mechanism at some epsilon, the note says once that the order may change
    with the seed. ``reference`` (the public rows' own workload error) adds the epsilons
    at which no mechanism's mean is below it. None for an empty summary."""
    if summary is None or summary.empty:
        return None
    named = lambda m: (labels or {}).get(m, m)   # noqa: E731
    clauses, not_below, single = [], [], False
    for eps, rows in summary.groupby("epsilon", sort=True):
        rows = rows.sort_values(["mean", "mechanism"], ignore_index=True)
        best = rows.iloc[0]
        text = f"at ε = {eps:g}, {named(best['mechanism'])} ({best['mean']:.3f})"
        if len(rows) > 1:
            second = rows.iloc[1]
            if min(best["runs"], second["runs"]) < 2:
                single = True
                text += f", then {named(second['mechanism'])} ({second['mean']:.3f})"
            elif best["max"] >= second["min"]:
                text += (f", level with {named(second['mechanism'])} ({second['mean']:.3f}; "
                         "their ranges over the seeds overlap)")
            else:
                text += f", ahead of {named(second['mechanism'])} ({second['mean']:.3f})"
        clauses.append(text)
        if reference is not None and best["mean"] >= reference:
            not_below.append(f"{eps:g}")
    note = "Lowest mean workload error " + "; ".join(clauses) + "."
    if single:
        note += " With one run of a mechanism, the order may change with the seed."
    if not_below:
        where = not_below[0] if len(not_below) == 1 else \
            ", ".join(not_below[:-1]) + " and " + not_below[-1]
        note += (f" At ε = {where}, no mechanism is below the public rows alone "
                 f"({reference:.3f}): there, releasing the public rows (Public-only, no budget) "
                 "does as well on this workload.")
    return note


# -- uncertainty bounds ----------------------------------------------------------------------

def is_vacuous(bound: Mapping) -> bool:
    """Whether a ``marginal_bounds`` entry is at the largest possible error (L1/n >= 2)."""
    value = bound.get("bound_normalised")
    return value is not None and value >= MAX_L1 * (1 - VACUOUS_TOLERANCE)


def bound_text(bound: Mapping) -> str:
    """A bound as the Release page shows it: counts and share of n, or why there is none."""
    if bound.get("bound_l1") is None:
        return "no bound"
    if is_vacuous(bound):
        return NO_INFORMATION
    return f"{bound['bound_l1']:.4g} ({bound['bound_normalised']:.3f} of n)"


def bounds_summary(report: Mapping) -> str:
    """One line over a release's bounds: how many marginals have an informative one,
    how many bounds are vacuous (:func:`is_vacuous`: the largest possible error, so
    they pin nothing down), and why the others have none (each reason with its
    count, most frequent first)."""
    bounds = (report.get("marginal_bounds") or {}).get("bounds", [])
    missing = Counter((b.get("note") or "no reason given").removeprefix("no bound: ")
                      for b in bounds if b.get("bound_l1") is None)
    vacuous = sum(is_vacuous(b) for b in bounds)
    informative = len(bounds) - sum(missing.values()) - vacuous
    text = f"{informative} of {len(bounds)} marginals have an informative bound."
    if vacuous:
        text += (f" {vacuous} {'bound is' if vacuous == 1 else 'bounds are'} the largest "
                 "possible error (no information).")
    if missing:
        text += " Without one: " + "; ".join(f"{n} × {why}" for why, n in missing.most_common())
        text += "."
    return text


def bounds_display_frame(report: Mapping) -> pd.DataFrame:
    """The report's bounds as text: a vacuous bound reads "no information"."""
    frame = bounds_frame(report)
    block = report.get("marginal_bounds") or {}
    frame.insert(2, f"{block.get('level', 0.95):.0%} bound (L1 counts)",
                 [bound_text(b) for b in block.get("bounds", [])])
    return frame.drop(columns=["bound (L1, counts)", "bound (L1 / n)"])
