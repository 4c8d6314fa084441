"""Error bounds on released marginals, computed from released values only.

Section 5 ("Uncertainty quantification") of the AIM paper (McKenna, Mullins,
Sheldon, Miklau 2022). For every workload marginal ``r`` we bound the error of
the synthetic data ``S``, ``||M_r(D) - M_r(S)||_1`` (counts), at a level
``1 - lambda`` (default 95%). The inputs of :func:`marginal_bounds` are the
release report and the synthetic records: the private table is never an
argument, so every bound is DP post-processing. Notation: ``n_r`` cells of
``r``; ``sigma_s`` the per-cell noise std of the measurement of ``s`` (the
report's ``noise_std``; research mode adds ``N(0, sigma_s^2)`` per cell).

**Kinds.**

* ``exact``: ``r`` lies inside a clique answered exactly from public columns
  (zero noise, every column public). Then ``M_r(D)`` itself is released and
  the bound is the error itself, ``||M_r(D) - M_r(S)||_1``. Also ``exact``,
  with bound 0: ``r`` inside the public columns of a conditional-generation
  run, whose records keep their own public values (``M_r(S) = M_r(D)``).
* ``supported``: ``r`` lies inside at least one clique measured with noise
  (private measurements only). Theorems 1-2 of the paper. Projecting a
  measurement ``y_s`` (``s ⊇ r``) down to ``r`` sums ``n_s / n_r`` cells per
  projected cell, so ``P_{s->r} y_s = M_r(D) + noise`` of variance
  ``v_s = sigma_s^2 n_s / n_r`` per cell. The inverse-variance average
  ``ybar_r = sigbar_r^2 sum_s P_{s->r} y_s / v_s``, ``sigbar_r^2 = 1 / sum_s
  1/v_s`` is ``M_r(D) + z`` with ``z ~ N(0, sigbar_r^2 I_{n_r})`` (Theorem 1),
  and, by the triangle inequality,
  ``||M_r(D) - M_r(S)||_1 <= ||ybar_r - M_r(S)||_1 + ||z||_1``. The inequality
  used for ``||z||_1``: ``E||z||_1 = sqrt(2/pi) sigbar_r n_r`` and
  ``z -> ||z||_1`` is ``sigbar_r sqrt(n_r)``-Lipschitz in a standard Gaussian
  vector (``||x||_1 <= sqrt(n_r) ||x||_2``), so Gaussian concentration of
  Lipschitz functions (Tsirelson-Ibragimov-Sudakov,
  ``P[f >= E f + t] <= exp(-t^2 / (2 L^2))``) gives, with probability
  ``>= 1 - lambda``,
  ``||z||_1 <= sigbar_r (sqrt(2/pi) n_r + sqrt(2 n_r log(1/lambda)))``
  (:func:`gaussian_l1_bound`). Bound:
  ``||ybar_r - M_r(S)||_1 + sigbar_r (sqrt(2/pi) n_r + sqrt(2 n_r log(1/lambda)))``.
* ``public-only (no bound)``: every clique containing ``r`` was answered
  from public rows (JAM-PGM's proxy ``M_r(D_pub) n / n_pub``). Their bias
  against ``D`` is unknown and nothing released measures it, so there is no
  bound. Public-row measurements never enter a bound.
* ``unsupported``: nothing measured contains ``r``. Theorem 4 of the paper,
  for the last selection round ``t`` only (the release then carries the
  quantities it needs, see :func:`selection_release`). Scores have the form
  ``q_c = w_c (||M_c(D) - M_c(p_{t-1})||_1 - o_c)`` with weight ``w_c`` and
  offset ``o_c`` (AIM: ``w_c`` its candidate weight, ``o_c = sqrt(2/pi)
  sigma_t n_c``; MWEM+PGM: ``1, n_c``; JAM-PGM/vJAM-PGM private candidates:
  ``1, sqrt(2/pi) sigma_t n_c``; exact public answers ``1, 0``; JAM-PGM's
  public-row proxy: ``1`` and an unknown offset ``>= 0``). The exponential
  mechanism with parameter ``eps_t``, sensitivity ``Delta`` over ``|C_t|``
  candidates picks ``r_t`` with ``q_{r_t} >= max_c q_c - (2 Delta / eps_t)
  log(|C_t| / lambda_1)`` with probability ``>= 1 - lambda_1`` (its utility
  guarantee). For a candidate ``r`` of that round, with ``U_t`` a bound on
  ``E_t = ||M_{r_t}(D) - M_{r_t}(p_{t-1})||_1`` that holds with probability
  ``>= 1 - lambda_2`` (exact, or the supported bound above with ``lambda_2``
  and ``M_{r_t}(p_{t-1})`` in place of ``M_r(S)``):
  ``||M_r(D) - M_r(p_{t-1})||_1 <= o_r + (w_{r_t} (U_t - o_{r_t}) +
  (2 Delta / eps_t) log(|C_t| / lambda_1)) / w_r`` (an unknown ``o_{r_t}``
  is replaced by 0, which only loosens it), and then
  ``||M_r(D) - M_r(S)||_1 <= that + ||M_r(p_{t-1}) - M_r(S)||_1``. We take
  ``lambda_1 = lambda_2 = lambda / 2``. Unsupported marginals that were not
  candidates of the last selection (or whose previous-model marginal was not
  released) get no bound.

**Assumptions, as in the paper.** The set of measurements supporting ``r``
and their noise scales are treated as fixed when combining them (with AIM's
adaptive noise scales this is the paper's approximation; with a single
supporting measurement it is exact). Each bound holds at its level for that
marginal, not simultaneously for all of them. Release mode adds discrete
Gaussian noise (variance at most ``sigma^2``, sub-Gaussian with parameter
``sigma``); the Gaussian inequality above is then applied as an
approximation, not a proof. PMW-Pub and GEM measure single counting queries,
not marginals: bounds are not available for them.

Normalised bounds divide by ``n`` (released under bounded DP) or, under
unbounded DP where ``n`` is not released, by the number of synthetic rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import ConfigError
from .marginals import CodedTable
from .schema import Schema

Clique = tuple[str, ...]

EXACT = "exact"
SUPPORTED = "supported"
PUBLIC_ONLY = "public-only (no bound)"
UNSUPPORTED = "unsupported"

#: Cap on the cells of previous-model marginals put into a release (Theorem 4's inputs).
MAX_PREVIOUS_MODEL_CELLS = 1_000_000

METHOD = ("AIM paper (McKenna et al. 2022) section 5: supported marginals by the inverse-variance "
          "average of the noisy measurements that contain them (Theorems 1-2) with Gaussian "
          "concentration of the L1 norm; unsupported ones by the exponential mechanism's utility "
          "guarantee in the last selection round (Theorem 4); public-row measurements are not used "
          "(unknown bias). See docs/uncertainty.md.")


@dataclass(frozen=True)
class MarginalBound:
    """A bound on ``||M_r(D) - M_r(S)||_1`` for one workload marginal.

    ``bound_l1`` is in counts, ``bound_normalised`` divided by ``n`` (``None``
    when there is no bound); ``supported_by`` the measured cliques it uses;
    ``noise_std`` the per-cell std ``sigbar_r`` of the combined estimate.
    """

    clique: Clique
    kind: str
    supported_by: tuple[Clique, ...]
    bound_l1: float | None
    bound_normalised: float | None
    level: float
    noise_std: float | None = None
    note: str = ""

    def to_json(self) -> dict:
        return {"clique": list(self.clique), "kind": self.kind,
                "supported_by": [list(c) for c in self.supported_by],
                "bound_l1": self.bound_l1, "bound_normalised": self.bound_normalised,
                "level": self.level, "noise_std": self.noise_std, "note": self.note}


# -- the arithmetic --------------------------------------------------------------

def project(values: np.ndarray, clique: Sequence[str], onto: Sequence[str],
            sizes: Mapping[str, int]) -> np.ndarray:
    """``P_{s->r}``: the marginal of ``clique`` summed down to ``onto`` (a subset), in ``onto``'s order."""
    clique, onto = tuple(clique), tuple(onto)
    if not set(onto) <= set(clique):
        raise ValueError(f"{onto} is not inside {clique}")
    arr = np.asarray(values, dtype=float).reshape([sizes[c] for c in clique])
    arr = arr.sum(axis=tuple(i for i, c in enumerate(clique) if c not in onto))
    kept = [c for c in clique if c in onto]
    return np.transpose(arr, [kept.index(c) for c in onto]).reshape(-1)


def projected_variance(noise_std: float, clique: Sequence[str], onto: Sequence[str],
                       sizes: Mapping[str, int]) -> float:
    """Per-cell noise variance of a projection: ``sigma_s^2 n_s / n_r``."""
    cells = lambda cl: math.prod(sizes[c] for c in cl)  # noqa: E731
    return noise_std ** 2 * cells(clique) / cells(onto)


def inverse_variance_average(estimates: Sequence[tuple[np.ndarray, float]]) -> tuple[np.ndarray, float]:
    """``(ybar, sigbar^2)`` with ``ybar = sigbar^2 sum_i y_i / v_i`` and ``sigbar^2 = 1 / sum_i 1/v_i``."""
    precision = sum(1.0 / v for _, v in estimates)
    var = 1.0 / precision
    return var * sum(y / v for y, v in estimates), var


def gaussian_l1_bound(noise_std: float, cells: int, lam: float) -> float:
    """``t`` with ``P[||z||_1 >= t] <= lam`` for ``z ~ N(0, noise_std^2 I_cells)``:
    ``noise_std (sqrt(2/pi) cells + sqrt(2 cells log(1/lam)))``."""
    return noise_std * (math.sqrt(2 / math.pi) * cells + math.sqrt(2 * cells * math.log(1 / lam)))


def em_slack(epsilon: float, sensitivity: float, n_candidates: int, lam: float) -> float:
    """Exponential mechanism's utility gap: ``(2 Delta / eps) log(|C| / lam)``."""
    return 2 * sensitivity / epsilon * math.log(n_candidates / lam)


# -- reading a release -------------------------------------------------------------

@dataclass(frozen=True)
class _Released:
    clique: Clique
    noise_std: float
    values: np.ndarray


def _measurements(report: Mapping) -> tuple[list[_Released], list[_Released], list[_Released]]:
    """The released measurements as (noisy private, exact public-column, public-row proxy)."""
    public_cols = set(report.get("public_information", {}).get("columns") or ())
    noisy, exact, proxy = [], [], []
    for m in report["measurements"]:
        rel = _Released(tuple(m["clique"]), float(m["noise_std"]),
                        np.asarray(m["noisy_answer"], dtype=float))
        if rel.noise_std > 0:
            noisy.append(rel)
        elif set(rel.clique) <= public_cols:
            exact.append(rel)
        else:
            proxy.append(rel)
    return noisy, exact, proxy


def unavailable_reason(report: Mapping) -> str | None:
    """Why no bounds can be computed for this release (``None`` when they can)."""
    from .mechanisms import MECHANISMS

    name = report.get("config", {}).get("mechanism")
    if (name in MECHANISMS and MECHANISMS[name].capabilities.own_rounds) or \
            any("query" in m for m in report.get("measurements", [])):
        return (f"Not available for this mechanism ({name}): it measures single counting "
                "queries, not marginals.")
    if any("noisy_answer" not in m for m in report.get("measurements", [])):
        return "Not available: the report does not carry the noisy answers."
    return None


def _supported(r: Clique, noisy: Sequence[_Released], sizes) -> tuple[np.ndarray, float, tuple] | None:
    """``(ybar_r, sigbar_r^2, supporting cliques)`` from the noisy measurements containing ``r``."""
    ests, used = [], []
    for m in noisy:
        if set(r) <= set(m.clique):
            ests.append((project(m.values, m.clique, r, sizes),
                         projected_variance(m.noise_std, m.clique, r, sizes)))
            used.append(m.clique)
    if not ests:
        return None
    ybar, var = inverse_variance_average(ests)
    return ybar, var, tuple(dict.fromkeys(used))


def combined_estimate(report: Mapping, clique: Sequence[str]) -> tuple[np.ndarray, float, tuple] | None:
    """``(ybar_r, sigbar_r, supporting cliques)`` from a report's noisy measurements, or ``None``."""
    sizes = Schema.from_json(report["schema"]).sizes
    sup = _supported(tuple(clique), _measurements(report)[0], sizes)
    return None if sup is None else (sup[0], math.sqrt(sup[1]), sup[2])


def _exact(r: Clique, exact: Sequence[_Released], sizes) -> tuple[np.ndarray, Clique] | None:
    for m in exact:
        if set(r) <= set(m.clique):
            return project(m.values, m.clique, r, sizes), m.clique
    return None


def _model_error_bound(r: Clique, against: np.ndarray, noisy, exact, sizes, lam: float):
    """``(bound on ||M_r(D) - against||_1 at 1 - lam, supporters)``, or ``None``."""
    ex = _exact(r, exact, sizes)
    if ex is not None:
        return float(np.abs(ex[0] - against).sum()), (ex[1],)
    sup = _supported(r, noisy, sizes)
    if sup is None:
        return None
    ybar, var, used = sup
    return float(np.abs(ybar - against).sum()) + gaussian_l1_bound(math.sqrt(var), ybar.size, lam), used


class _Theorem4:
    """Theorem 4 for the unsupported workload marginals, from the last selection
    round: the selected marginal's score bound is the same for every ``r``, so it
    is computed once, and the candidates are looked up by clique."""

    def __init__(self, last: Mapping | None, noisy, exact, sizes, lam: float):
        self.last = last
        self.candidates: dict = {}
        self.reach = self.failure = None
        if not last:
            self.failure = "no measurement contains it and no round selected a marginal"
            return
        for c in last.get("candidates", []):
            if c.get("offset") is not None:
                self.candidates.setdefault(tuple(c["clique"]), c)
        chosen = last["chosen"]
        self.selected = tuple(chosen["clique"])
        ut = _model_error_bound(self.selected, np.asarray(chosen["previous_model"], dtype=float),
                                noisy, exact, sizes, lam / 2)
        if ut is None:
            self.failure = ("the last round selected a marginal measured on public rows "
                            "only, which bound nothing about the private table")
            return
        score_t = chosen["weight"] * (ut[0] - (chosen.get("offset") or 0.0))
        # score_t + the exponential mechanism's slack: every candidate's score is below it
        self.reach = score_t + em_slack(last["epsilon"], last["sensitivity"],
                                        last["n_candidates"], lam / 2)

    def bound(self, r: Clique):
        """``(bound, note)`` for the unsupported workload marginal ``r``."""
        if not self.last:
            return None, self.failure
        cand = self.candidates.get(r)
        if cand is None or cand.get("previous_model_to_synthetic_l1") is None:
            return None, "not a candidate of the last selection round (no released previous model)"
        if self.reach is None:
            return None, self.failure
        last = self.last
        model_err = max(0.0, cand["offset"] + self.reach / cand["weight"])
        drift = float(cand["previous_model_to_synthetic_l1"])   # ||M_r(p_{t-1}) - M_r(S)||_1
        return model_err + drift, (f"Theorem 4, round {last['round']}: selected "
                                   f"{'×'.join(self.selected)} (eps {last['epsilon']:.3g}, "
                                   f"{last['n_candidates']} candidates)")


def marginal_bounds(report: Mapping, synthetic_codes: pd.DataFrame, *,
                    level: float = 0.95) -> list[MarginalBound]:
    """Bounds on ``||M_r(D) - M_r(S)||_1`` for every workload marginal ``r``.

    Args:
        report: the release report (``Synthesizer`` / ``RunResult.report``, or
            the parsed report JSON); reads ``measurements``, ``workload``,
            ``schema``, ``public_information``, ``data``, ``config`` and
            ``last_selection``.
        synthetic_codes: the released synthetic records as integer codes of
            the report's schema (see :func:`codes_of` for decoded values).
        level: ``1 - lambda``, the probability each bound holds.

    Raises ConfigError when the mechanism measures no marginals (PMW-Pub, GEM).
    """
    _require_report(report)
    if not 0 < level < 1:
        raise ConfigError(f"level must lie strictly between 0 and 1, got {level!r}.")
    reason = unavailable_reason(report)
    if reason:
        raise ConfigError(reason)
    decoded = [str(c) for c, t in synthetic_codes.dtypes.items()
               if not pd.api.types.is_integer_dtype(t)]
    if decoded:
        raise ConfigError(
            f"marginal_bounds takes the synthetic records as integer codes; column(s) "
            f"{', '.join(map(repr, decoded[:5]))} hold other values (decoded records, as in a "
            "released file).",
            hint="Pass synth_core.uncertainty.codes_of(report, synthetic), which encodes "
                 "them with the report's schema.")
    lam = 1.0 - level
    sizes = Schema.from_json(report["schema"]).sizes
    synth = CodedTable.from_frame(synthetic_codes, sizes)
    n_public = report.get("data", {}).get("n")   # bounded DP: n is public, and S has n rows
    n = n_public or synth.n
    noisy, exact, proxy = _measurements(report)
    theorem4 = _Theorem4(report.get("last_selection"), noisy, exact, sizes, lam)
    conditioned = set((report.get("conditional_generation") or {}).get("conditioned_on") or ())
    out = []
    for cl in report["workload"]["cliques"]:
        r = tuple(cl)
        s = synth.marginal(r)
        ex = _exact(r, exact, sizes)
        sup = _supported(r, noisy, sizes)
        std, note = None, ""
        if conditioned and set(r) <= conditioned:
            kind, used, bound = EXACT, (), 0.0
            note = "conditional generation kept every record's public values: no error"
        elif ex is not None:
            kind, used = EXACT, (ex[1],)
            bound = float(np.abs(ex[0] - s).sum())
            note = "the released exact public-column answer: this is the error itself"
        elif sup is not None:
            ybar, var, used = sup
            kind, std = SUPPORTED, math.sqrt(var)
            bound = float(np.abs(ybar - s).sum()) + gaussian_l1_bound(std, s.size, lam)
        elif any(set(r) <= set(m.clique) for m in proxy):
            kind, bound = PUBLIC_ONLY, None
            used = tuple(dict.fromkeys(m.clique for m in proxy if set(r) <= set(m.clique)))
            note = "no bound: supported only by public data (unknown bias)"
        else:
            kind, used = UNSUPPORTED, ()
            bound, note = theorem4.bound(r)
            if bound is None:
                note = "no bound: " + note
        if bound is not None and n_public and bound > 2 * n_public:
            # two tables of n records are at most 2n apart in L1: a larger bound says nothing
            bound = 2.0 * n_public
            note = (note + "; " if note else "") + "capped at 2n, the largest possible distance"
        out.append(MarginalBound(r, kind, used, bound,
                                 None if bound is None else bound / max(n, 1), level, std, note))
    return out


def bounds_block(report: Mapping, synthetic_codes: pd.DataFrame, *, level: float = 0.95) -> dict:
    """The report's ``marginal_bounds`` block (``available: False`` with a note when not computable)."""
    reason = unavailable_reason(report)
    if reason:
        return {"available": False, "level": level, "note": reason}
    bounded = report.get("data", {}).get("n") is not None
    return {"available": True, "level": level, "method": METHOD,
            "normalised_by": "n (public under bounded DP)" if bounded else
                             "the number of synthetic rows (n is not released under unbounded DP)",
            "bounds": [b.to_json() for b in marginal_bounds(report, synthetic_codes, level=level)]}


def _require_report(report) -> None:
    """ConfigError unless ``report`` is a parsed report (a file name is not)."""
    if not isinstance(report, Mapping):
        raise ConfigError(f"report must be the release report as a dict, not a "
                          f"{type(report).__name__}.",
                          hint="Read the file first: json.load(open('report.json')).")


def codes_of(report: Mapping, synthetic: pd.DataFrame) -> pd.DataFrame:
    """Integer codes of decoded synthetic records, with the report's schema."""
    _require_report(report)
    return Schema.from_json(report["schema"]).encode(synthetic, table_name="synthetic data")


def bounds_frame(report: Mapping) -> pd.DataFrame:
    """The ``marginal_bounds`` block of a report as a table (empty when not available)."""
    block = report.get("marginal_bounds") or {}
    rows = [{"marginal": " × ".join(b["clique"]), "kind": b["kind"],
             "bound (L1, counts)": b["bound_l1"], "bound (L1 / n)": b["bound_normalised"],
             "supported by": "; ".join(" × ".join(c) for c in b["supported_by"]),
             "note": b["note"]} for b in block.get("bounds", [])]
    return pd.DataFrame(rows, columns=["marginal", "kind", "bound (L1, counts)", "bound (L1 / n)",
                                       "supported by", "note"])


# -- run side: what the release must carry for Theorem 4 ---------------------------------

def _score_terms(engine, plan, cand) -> tuple[float, float | None] | None:
    """``(w_c, o_c)`` of a candidate's score ``w_c (||M_c(D) - M_c(p)||_1 - o_c)``,
    as the mechanism declares them (:meth:`~synth_core.mechanisms.base.Mechanism.score_terms`,
    the same terms its ``scores`` use); ``o_c = None``: unknown but ``>= 0``;
    ``None``: the mechanism's scores do not have this form.
    """
    terms = engine.mechanism.score_terms(engine.state, plan, cand)
    if terms is None:
        return None
    return float(terms.weight), None if terms.offset is None else float(terms.offset)


def selection_release(engine, workload, synthetic_codes: pd.DataFrame) -> dict | None:
    """Released inputs of Theorem 4: the last selection round of a Private-PGM run.

    Everything here is a function of earlier releases (DP post-processing):
    the round's exponential-mechanism parameter and sensitivity, its number of
    candidates, the score weight and offset of the selected candidate and of
    each workload marginal that is a candidate but contained in no
    measurement; the marginal of the model ``p_{t-1}`` fitted before the
    round's measurement (a function of the earlier noisy measurements) on the
    selected clique; and, for each of those workload marginals, one number:
    ``||M_r(p_{t-1}) - M_r(S)||_1`` against the released synthetic data ``S``
    (the model marginals themselves would make the report tens of MB). At
    most :data:`MAX_PREVIOUS_MODEL_CELLS` model cells are computed.
    ``None`` when no round selected anything or the scores have another form.
    """
    last = engine.last_selection
    if last is None:
        return None
    round_, plan, pool, chosen, before = last
    sizes = engine.data.sizes
    cells = lambda cl: math.prod(sizes[c] for c in cl)  # noqa: E731
    terms = lambda cand: _score_terms(engine, plan, cand)  # noqa: E731
    chosen_terms = terms(chosen)
    if chosen_terms is None:
        return None
    measured = [set(m.clique) for m in engine.state.measurements]
    in_workload = set(workload.cliques)
    by_clique: dict = {}
    for cand in pool:
        if cand.clique in by_clique or cand.clique not in in_workload \
                or any(set(cand.clique) <= s for s in measured):
            continue
        t = terms(cand)
        if t is not None and t[1] is not None:
            by_clique[cand.clique] = (cand, t)
    wanted, total = [], cells(chosen.clique)
    for cl in sorted(by_clique, key=cells):
        if total + cells(cl) > MAX_PREVIOUS_MODEL_CELLS:
            break
        wanted.append(cl)
        total += cells(cl)
    counts = before.counts_many([chosen.clique] + wanted)
    synth = CodedTable.from_frame(synthetic_codes, sizes)
    return {
        "note": "Inputs of the section-5 bounds (Theorem 4) for marginals no measurement contains: "
                "functions of earlier noisy measurements and of the synthetic data only.",
        "round": round_, "epsilon": plan.epsilon, "sensitivity": plan.sensitivity,
        "n_candidates": len(pool),
        "chosen": {"clique": list(chosen.clique), "source": chosen.source,
                   "weight": chosen_terms[0], "offset": chosen_terms[1],
                   "previous_model": [float(v) for v in counts[tuple(chosen.clique)]]},
        "candidates": [{"clique": list(cl), "source": by_clique[cl][0].source,
                        "weight": by_clique[cl][1][0], "offset": by_clique[cl][1][1],
                        "previous_model_to_synthetic_l1": float(
                            np.abs(counts[tuple(cl)] - synth.marginal(cl)).sum())}
                       for cl in wanted],
    }


def add_to_report(report: dict, engine, workload, synthetic_codes: pd.DataFrame,
                  *, level: float = 0.95) -> None:
    """Put ``last_selection`` (if any) and the ``marginal_bounds`` block into a release report."""
    last = selection_release(engine, workload, synthetic_codes)
    if last is not None:
        report["last_selection"] = last
    report["marginal_bounds"] = bounds_block(report, synthetic_codes, level=level)
