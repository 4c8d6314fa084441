"""Privacy arithmetic: the one place for every differential-privacy constant.

Accounting is zero-concentrated DP (rho-zCDP). Every data-dependent step of a
mechanism is charged to one :class:`Ledger`, which raises
:class:`~synth_core.errors.BudgetExceededError` instead of spending beyond its
total.

Building blocks (DESIGN.md section 2):

* Gaussian mechanism: adding ``N(0, s^2)`` per cell to a query of L2
  sensitivity ``d`` costs ``rho = d^2 / (2 s^2)``.
* Exponential mechanism with parameter ``eps`` over scores of sensitivity
  ``Delta``: ``Pr[r] ~ exp(eps * score(r) / (2 Delta))``; costs ``eps^2 / 8``.
* Permute-and-flip with parameter ``eps`` is ``eps``-DP; charged ``eps^2 / 2``.
* Per-round parameters of the comparison mechanisms: :func:`pmw_pub_eps0`
  (PMW-Pub) and :func:`gem_eps0` (GEM, GEM-Pub).
* ``(epsilon, delta)`` converts to the largest ``rho`` whose exact conversion
  (Canonne, Kamath and Steinke 2020) gives at most ``delta``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from enum import Enum

import numpy as np

from .errors import BudgetExceededError, ConfigError

#: Relative slack allowed on the total when a charge spends "exactly what is
#: left": it only absorbs floating-point rounding of ``total - spent``.
LEDGER_RELATIVE_TOLERANCE = 1e-12


# --------------------------------------------------------------------------
# (epsilon, delta) <-> rho
# --------------------------------------------------------------------------

def cdp_delta(rho: float, eps: float) -> float:
    """Smallest delta such that rho-zCDP implies (eps, delta)-DP.

    Exact conversion of Canonne, Kamath and Steinke (2020, Proposition 7):
    ``delta = min_{a > 1} exp((a - 1)(a rho - eps)) / (a - 1) * (1 - 1/a)^a``.
    The objective's log is convex in ``a``; its minimiser is found by bisection
    on the derivative ``(2a - 1) rho - eps + log(1 - 1/a)``.
    """
    if rho < 0 or eps < 0:
        raise ConfigError(f"rho and epsilon must be non-negative (rho={rho}, eps={eps}).")
    if rho == 0:
        return 0.0
    lo, hi = 1.0 + 1e-12, (eps + 1.0) / (2.0 * rho) + 2.0
    for _ in range(200):
        a = 0.5 * (lo + hi)
        derivative = (2 * a - 1) * rho - eps + math.log1p(-1.0 / a)
        if derivative < 0:
            lo = a
        else:
            hi = a
    a = 0.5 * (lo + hi)
    log_delta = (a - 1) * (a * rho - eps) + a * math.log1p(-1.0 / a) - math.log(a - 1)
    return min(1.0, math.exp(log_delta))


def _bisect(ok, lo: float, hi: float, *, ok_is_low: bool) -> float:
    """Boundary of a monotone predicate on [lo, hi]; returns the side where ``ok`` holds."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if ok(mid) == ok_is_low:
            lo = mid
        else:
            hi = mid
    return lo if ok_is_low else hi


def cdp_epsilon(rho: float, delta: float) -> float:
    """Smallest epsilon such that rho-zCDP implies (epsilon, delta)-DP."""
    _check_delta(delta)
    if rho == 0:
        return 0.0
    hi = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta)) + 1.0
    return _bisect(lambda e: cdp_delta(rho, e) <= delta, 0.0, hi, ok_is_low=False)


def rho_from_epsilon_delta(epsilon: float, delta: float) -> float:
    """Largest rho such that rho-zCDP implies (epsilon, delta)-DP."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ConfigError(f"epsilon must be a positive number, got {epsilon!r}.")
    _check_delta(delta)
    return _bisect(lambda r: cdp_delta(r, epsilon) <= delta, 0.0, epsilon + 1.0, ok_is_low=True)


def _check_delta(delta: float) -> None:
    if not (0 < delta < 1):
        raise ConfigError(
            f"delta must lie strictly between 0 and 1, got {delta!r}.",
            hint="A common choice is 1e-9 or 1/n^2 for n records.",
        )


# --------------------------------------------------------------------------
# Neighbouring relation and sensitivities
# --------------------------------------------------------------------------

class Neighbours(str, Enum):
    """Neighbouring relation of the guarantee."""

    #: replace one record; n is public (JAM-PGM's choice)
    BOUNDED = "bounded"
    #: add or remove one record; n is private (AIM's choice)
    UNBOUNDED = "unbounded"

    @property
    def marginal_l1_sensitivity(self) -> float:
        """L1 sensitivity of a marginal (count vector)."""
        return 2.0 if self is Neighbours.BOUNDED else 1.0

    @property
    def marginal_l2_sensitivity(self) -> float:
        """L2 sensitivity of a marginal (count vector)."""
        return math.sqrt(2.0) if self is Neighbours.BOUNDED else 1.0

    @property
    def n_is_public(self) -> bool:
        return self is Neighbours.BOUNDED

    @classmethod
    def parse(cls, value: "Neighbours | str") -> "Neighbours":
        try:
            return cls(value)
        except ValueError:
            raise ConfigError(
                f"Unknown neighbouring relation {value!r}.",
                hint="Use 'bounded' (replace one record) or 'unbounded' (add/remove one record).",
            ) from None


# --------------------------------------------------------------------------
# Costs of the building blocks
# --------------------------------------------------------------------------

def gaussian_rho(noise_std: float, l2_sensitivity: float) -> float:
    """zCDP cost of Gaussian noise with std ``noise_std`` on a query of L2 sensitivity."""
    return l2_sensitivity ** 2 / (2.0 * noise_std ** 2)


def gaussian_std(rho: float, l2_sensitivity: float) -> float:
    """Noise std that makes the Gaussian mechanism cost exactly ``rho``."""
    if rho <= 0:
        raise ConfigError(f"A Gaussian measurement needs a positive budget, got rho={rho}.")
    return l2_sensitivity / math.sqrt(2.0 * rho)


def exponential_rho(eps: float) -> float:
    """zCDP cost of the exponential mechanism with parameter ``eps`` (bounded range)."""
    return eps ** 2 / 8.0


def exponential_eps(rho: float) -> float:
    """Exponential-mechanism parameter that costs exactly ``rho``."""
    return math.sqrt(8.0 * rho)


def permute_and_flip_rho(eps: float) -> float:
    """zCDP cost of permute-and-flip with parameter ``eps`` (pure DP to zCDP)."""
    return eps ** 2 / 2.0


def pmw_pub_eps0(rho: float, rounds: int) -> float:
    """PMW-Pub's per-round parameter ``eps0 = eps_tilde / sqrt(2T)`` with ``rho = eps_tilde^2 / 2``.

    So ``eps0 = sqrt(rho / T)``. Each round spends ``eps0^2 / 2`` on
    permute-and-flip (parameter ``eps0``) and ``eps0^2 / 2`` on the Gaussian
    measurement ``N(0, (1 / (n eps0))^2)`` of a query of sensitivity ``1/n``:
    ``eps0^2`` per round, ``T eps0^2 = rho`` in total.
    """
    if rounds < 1:
        raise ConfigError(f"PMW-Pub needs at least one round, got T={rounds}.")
    return math.sqrt(rho / rounds)


def gem_eps0(rho: float, rounds: int, alpha: float) -> float:
    """GEM's per-round parameter ``eps0 = sqrt(2 rho / (T (alpha^2 + (1 - alpha)^2)))``.

    Each round selects with the exponential mechanism at parameter
    ``2 alpha eps0`` (cost ``alpha^2 eps0^2 / 2``) and measures with Gaussian
    noise ``sigma = (1/n) / ((1 - alpha) eps0)`` on a query of sensitivity
    ``1/n`` (cost ``(1 - alpha)^2 eps0^2 / 2``): ``rho / T`` per round.
    """
    if rounds < 1:
        raise ConfigError(f"GEM needs at least one round, got T={rounds}.")
    if not 0 < alpha < 1:
        raise ConfigError(f"GEM's budget split alpha must lie in (0, 1), got {alpha}.")
    return math.sqrt(2.0 * rho / (rounds * (alpha ** 2 + (1 - alpha) ** 2)))


# --------------------------------------------------------------------------
# Randomised building blocks
# --------------------------------------------------------------------------

def gaussian_noise(rng: np.random.Generator, std: float, size: int) -> np.ndarray:
    """Continuous Gaussian noise (research mode)."""
    return rng.normal(0.0, std, size=size)


def exponential_mechanism(scores: np.ndarray, eps: float, sensitivity: float,
                          rng: np.random.Generator) -> int:
    """Index drawn with ``Pr[i] ~ exp(eps * score_i / (2 * sensitivity))``.

    Uses the Gumbel-max trick, so no score is ever exponentiated.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.size == 0:
        raise ConfigError("The exponential mechanism needs at least one candidate.")
    logits = (eps / (2.0 * sensitivity)) * scores
    return int(np.argmax(logits + rng.gumbel(size=scores.size)))


def exponential_probabilities(scores: np.ndarray, eps: float, sensitivity: float) -> np.ndarray:
    """Exact selection probabilities of :func:`exponential_mechanism` (log-sum-exp)."""
    logits = (eps / (2.0 * sensitivity)) * np.asarray(scores, dtype=float)
    logits -= logits.max()
    p = np.exp(logits)
    return p / p.sum()


def permute_and_flip(scores: np.ndarray, eps: float, sensitivity: float,
                     rng: np.random.Generator) -> int:
    """Permute-and-flip (McKenna and Sheldon 2020): an ``eps``-DP selection.

    Visit candidates in random order; accept ``r`` with probability
    ``exp(eps * (score_r - max score) / (2 * sensitivity))``.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.size == 0:
        raise ConfigError("Permute-and-flip needs at least one candidate.")
    best = scores.max()
    log_accept = (eps / (2.0 * sensitivity)) * (scores - best)
    while True:  # terminates: the best candidate is accepted with probability 1
        for i in rng.permutation(scores.size):
            if np.log(rng.random()) < log_accept[i] or log_accept[i] == 0.0:
                return int(i)


def report_noisy_max_exponential(scores: np.ndarray, eps: float, sensitivity: float,
                                 rng: np.random.Generator) -> int:
    """Permute-and-flip, sampled in one vectorised pass.

    Report-noisy-max with exponential noise, ``argmax_r eps score_r / (2 Delta) + Exp(1)``,
    has exactly the output distribution of permute-and-flip with parameter
    ``eps`` (Ding, Kifer, Steinke et al. 2021, "The permute-and-flip mechanism is
    identical to report-noisy-max with exponential noise"), so it is ``eps``-DP
    and charged :func:`permute_and_flip_rho`. Used where the candidates are
    millions of counting queries and :func:`permute_and_flip`'s Python loop
    would dominate. Candidates scored ``-inf`` are never chosen.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.size == 0 or not np.isfinite(scores).any():
        raise ConfigError("Permute-and-flip needs at least one candidate.")
    noisy = (eps / (2.0 * sensitivity)) * scores + rng.exponential(size=scores.size)
    return int(np.argmax(noisy))


# --------------------------------------------------------------------------
# The ledger
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Charge:
    """One entry of the ledger."""

    round: int
    step: str          # "select" or "measure"
    mechanism: str     # "exponential", "permute-and-flip", "gaussian"
    rho: float
    detail: str = ""   # e.g. the measured clique

    def to_json(self) -> dict:
        return asdict(self)


class Ledger:
    """The single privacy ledger of a run (rho-zCDP, fully adaptive composition).

    ``charge`` records a step and raises :class:`BudgetExceededError` when the
    running total would exceed ``total``. Nothing is recorded on a refused charge.
    """

    def __init__(self, total_rho: float):
        if not (total_rho > 0 and math.isfinite(total_rho)):
            raise ConfigError(f"The total privacy budget must be positive, got rho={total_rho!r}.")
        self.total = float(total_rho)
        self._charges: list[Charge] = []
        self._spent = 0.0

    @property
    def charges(self) -> tuple[Charge, ...]:
        return tuple(self._charges)

    @property
    def spent(self) -> float:
        return self._spent

    @property
    def remaining(self) -> float:
        return max(0.0, self.total - self._spent)

    def can_afford(self, rho: float) -> bool:
        return self._spent + rho <= self.total * (1.0 + LEDGER_RELATIVE_TOLERANCE)

    def charge(self, rho: float, *, round: int, step: str, mechanism: str,
               detail: str = "") -> Charge:
        if not (rho >= 0 and math.isfinite(rho)):
            raise ConfigError(f"A charge must be a finite non-negative rho, got {rho!r}.")
        if not self.can_afford(rho):
            raise BudgetExceededError(
                f"Refused to spend rho={rho:.6g} on {step} ({detail or mechanism}) in round {round}: "
                f"{self._spent:.6g} of {self.total:.6g} is already spent.",
                hint="This is a bug in the mechanism's budget schedule; nothing was measured.",
            )
        entry = Charge(round=round, step=step, mechanism=mechanism, rho=float(rho), detail=detail)
        self._charges.append(entry)
        self._spent = math.fsum(c.rho for c in self._charges)
        return entry

    def spent_by_step(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for c in self._charges:
            out[c.step] = out.get(c.step, 0.0) + c.rho
        return out

    def to_json(self) -> dict:
        return {
            "total_rho": self.total,
            "spent_rho": self._spent,
            "charges": [c.to_json() for c in self._charges],
        }
