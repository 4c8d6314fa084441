"""Privacy arithmetic: the one place for every differential-privacy constant.

Accounting is zero-concentrated DP (rho-zCDP). Every data-dependent step of a
mechanism is charged to one :class:`Ledger`, which raises
:class:`~synth_core.errors.BudgetExceededError` instead of spending beyond its
total.

Building blocks (their use by each mechanism: docs/mechanisms.md):

* Gaussian mechanism: adding ``N(0, s^2)`` per cell to a query of L2
  sensitivity ``d`` costs ``rho = d^2 / (2 s^2)``.
* Exponential mechanism with parameter ``eps`` over scores of sensitivity
  ``Delta``: ``Pr[r] ~ exp(eps * score(r) / (2 Delta))``; costs ``eps^2 / 8``.
* Permute-and-flip with parameter ``eps`` is ``eps``-DP; charged ``eps^2 / 2``.
* Per-round parameters of the comparison mechanisms: :func:`pmw_pub_eps0`
  (PMW-Pub) and :func:`gem_eps0` (GEM, GEM-Pub); the sensitivity of
  PrivBayes's mutual-information score: :func:`privbayes_mi_sensitivity`.
* ``(epsilon, delta)`` converts to the largest ``rho`` whose exact conversion
  (Canonne, Kamath and Steinke 2020) gives at most ``delta``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from enum import Enum

import numpy as np

from .errors import BudgetExceededError, ConfigError

#: Relative slack allowed on the total when a charge spends "exactly what is
#: left": it only absorbs floating-point rounding of ``total - spent``.
LEDGER_RELATIVE_TOLERANCE = 1e-12

#: The largest epsilon a run accepts. Far beyond any meaningful guarantee
#: (e^epsilon overflows a float from about 710), it keeps the conversion to rho
#: in the range where its arithmetic is exact to floating-point precision.
MAX_EPSILON = 1e6
#: The smallest epsilon a run accepts. Below it the noise of every measurement
#: dwarfs any count a table can have (at 1e-6, Titanic's noisy total asked for 3.4
#: million synthetic rows), and the noise scales leave floating-point range
#: (1e-150 divided by zero in the fit).
MIN_RUN_EPSILON = 1e-4


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
    return math.exp(min(log_delta, 0.0))  # delta is at most 1 (and exp cannot overflow)


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
    """Largest rho such that rho-zCDP implies (epsilon, delta)-DP (``0 < epsilon
    <= MAX_EPSILON``)."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ConfigError(f"epsilon must be a positive number, got {epsilon!r}.")
    if epsilon > MAX_EPSILON:
        raise ConfigError(f"epsilon must be at most {MAX_EPSILON:g}, got {epsilon:g}.",
                          hint="Such an epsilon promises no privacy; typical values lie "
                               "between 0.1 and 10.")
    _check_delta(delta)
    return _rho_for(float(epsilon), float(delta))


@functools.lru_cache(maxsize=1024)
def _rho_for(epsilon: float, delta: float) -> float:
    """The bisection of :func:`rho_from_epsilon_delta`, once per (epsilon, delta): a sweep
    validates one configuration per job, hundreds with the same few pairs."""
    return _bisect(lambda r: cdp_delta(r, epsilon) <= delta, 0.0, epsilon + 1.0, ok_is_low=True)


#: The largest delta a run, or a table's total, accepts. A delta should be far
#: below 1/n (it is the chance that the guarantee fails outright); this bound
#: only catches a slip such as 0.5 for 5e-5. Conversions alone accept any (0, 1).
MAX_DELTA = 1e-3


def check_delta_plausible(delta: float, what: str = "delta") -> None:
    """ConfigError when ``delta`` is above :data:`MAX_DELTA` (most likely a typo)."""
    if delta > MAX_DELTA:
        raise ConfigError(
            f"{what} = {delta:g} is above {MAX_DELTA:g}: delta is the chance that the "
            "guarantee fails outright, and a value this large lets a release reveal "
            "records; it is most likely a typo.",
            hint="A common choice is 1e-9, or 1/n^2 for n records; keep delta far below 1/n.")


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


@dataclass(frozen=True)
class Guarantee:
    """What a run's rho is stated under: the neighbour relation, the columns
    treated as public for every record, and the records treated as public (those a
    flag column marks in the private table; the guarantee protects the others).

    Runs on one table compose by adding their rho only when each is stated under
    the relation the total is stated under, or under one with fewer neighbouring
    pairs. A run that treats columns ``P`` as public is rho-zCDP for every pair of
    tables that differ in one record's values outside ``P``; those pairs include
    every pair differing outside any ``P' >= P``, so it is rho-zCDP under ``P'``
    too (:meth:`refusal_under` admits it). The converse fails: a run that treats
    more columns as public releases them without noise. Records flagged public
    are the same: a run that uses them (``public_rows``, the flag column) protects
    only the others, so it is covered only by a total stated with the same flag;
    a run that keeps them private is covered by either. A bounded run publishes
    the number of records, which no add/remove-one guarantee covers; an unbounded
    run is only ``4 rho``-zCDP under replace-one (group privacy over the removal
    and the addition), so it is refused too rather than charged a different rho.
    """

    neighbours: str
    public_columns: tuple[str, ...] = ()
    public_rows: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "neighbours", Neighbours.parse(self.neighbours).value)
        object.__setattr__(self, "public_columns", tuple(sorted(set(map(str, self.public_columns)))))
        if self.public_rows is not None:
            object.__setattr__(self, "public_rows", str(self.public_rows))

    def to_json(self) -> dict:
        return {"neighbours": self.neighbours, "public_columns": list(self.public_columns),
                "public_rows": self.public_rows}

    @classmethod
    def from_json(cls, state: dict) -> "Guarantee":
        return cls(state["neighbours"], tuple(state.get("public_columns") or ()),
                   state.get("public_rows"))

    def text(self) -> str:
        """In words: "bounded DP (replace one record)", the public columns and rows."""
        relation = ("bounded DP (replace one record)" if self.neighbours == "bounded"
                    else "unbounded DP (add or remove one record)")
        if self.public_columns:
            relation += f", columns {', '.join(self.public_columns)} public"
        if self.public_rows is not None:
            relation += f", the records flagged by column '{self.public_rows}' public"
        return relation

    def refusal_under(self, total: "Guarantee") -> str | None:
        """Why a run stated under this guarantee is not covered by a total stated under
        ``total`` (None: it is, at its own rho)."""
        if self.neighbours != total.neighbours:
            if total.neighbours == "unbounded":
                return ("this run is bounded (replace one record): its report publishes the "
                        "number of records, which no total under add or remove one record "
                        "covers")
            return ("this run's rho is stated under add or remove one record; under replace "
                    "one record (the total's relation) it would cost up to 4 times as much")
        extra = [c for c in self.public_columns if c not in total.public_columns]
        if extra:
            return (f"this run treats {', '.join(extra)} as public too: it would release "
                    f"{'that column' if len(extra) == 1 else 'those columns'} without noise, "
                    "which the total does not cover")
        if self.public_rows is not None and self.public_rows != total.public_rows:
            return (f"this run treats the records flagged by column '{self.public_rows}' as "
                    "public: it would use them without noise, which the total does not cover")
        return None

    @staticmethod
    def widest(guarantees) -> "Guarantee | None":
        """The one guarantee under which all of ``guarantees`` are covered (same
        relation and public rows, the union of their public columns); None when their
        neighbour relations or their public rows differ (or there are none)."""
        guarantees = list(guarantees)
        rows = {g.public_rows for g in guarantees} - {None}
        if not guarantees or len({g.neighbours for g in guarantees}) > 1 or len(rows) > 1:
            return None
        return Guarantee(guarantees[0].neighbours,
                         tuple(c for g in guarantees for c in g.public_columns),
                         next(iter(rows), None))


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


def privbayes_mi_sensitivity(n: int, binary: bool) -> float:
    """Sensitivity of PrivBayes's score ``I(X; Pi)`` (mutual information, in nats, of the
    empirical distribution of ``n`` records) when one record is replaced (PrivBayes,
    Zhang et al. 2017): ``(1/n) log n + ((n-1)/n) log(n/(n-1))`` when ``X`` or ``Pi`` is
    binary (two values), else ``(2/n) log((n+1)/2) + ((n-1)/n) log((n+1)/(n-1))``.
    """
    if n < 2:
        raise ConfigError(f"PrivBayes's score needs at least two records, got n={n}.")
    if binary:
        return math.log(n) / n + (n - 1) / n * math.log(n / (n - 1))
    return 2.0 / n * math.log((n + 1) / 2.0) + (n - 1) / n * math.log((n + 1) / (n - 1))


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
# Run modes: where a run's noise and selections come from
# --------------------------------------------------------------------------

#: ``research``: continuous Gaussian and Gumbel noise from the run's seeded numpy
#: generator (reproducible, fast, exactly the papers' samplers).
#: ``release``: integer marginals measured with OpenDP's discrete Gaussian and
#: selections sampled by OpenDP's exact noisy-max, both from OpenSSL's CSPRNG.
MODES = ("research", "release")


def resolve_mode(mode: str | None, seed: int | None) -> str:
    """The run mode of a configuration: ``mode`` as given, else research when
    seeded and release when not. A seed with release mode is refused."""
    if mode is None:
        return "research" if seed is not None else "release"
    if mode not in MODES:
        raise ConfigError(f"Unknown run mode {mode!r}.",
                          hint="Use 'research' (seedable, continuous Gaussian) or 'release' "
                               "(discrete Gaussian and secure randomness, never seeded).")
    if mode == "release" and seed is not None:
        raise ConfigError(
            f"Release mode cannot be seeded (seed={seed!r}): its noise comes from a "
            f"cryptographically secure source.",
            hint="Drop the seed for a release, or choose research mode for a reproducible run.")
    return mode


class NoiseSource:
    """Every random draw that touches private data: Gaussian measurements and
    selections. The engine makes one per run (:func:`noise_source`); the
    mechanisms never draw such noise themselves.

    Costs are the same in both modes (the ledger charges do not depend on the
    mode): Gaussian noise of std ``s`` (continuous, or discrete with scale
    ``s``) on a query of L2 sensitivity ``d`` is ``d^2 / (2 s^2)``-zCDP; the
    selections are the exponential mechanism (Gumbel noise) and permute-and-flip
    (exponential noise).
    """

    mode: str = ""
    #: how the report names the measurement noise
    noise: str = ""
    #: how the report names the selection noise's source
    selection_source: str = ""

    def gaussian(self, std: float, size: int) -> np.ndarray:
        """``size`` draws of zero-mean Gaussian noise of std (scale) ``std``."""
        raise NotImplementedError

    def measure(self, exact: np.ndarray, std: float) -> np.ndarray:
        """A noisy answer to a count vector ``exact`` (noise std ``std`` per cell)."""
        raise NotImplementedError

    def noisy_fraction(self, fraction: float, n: int, std: float) -> tuple[float, float]:
        """A counting query given as a fraction of ``n`` records, with noise of std
        ``std`` on the fraction: ``(clipped noisy fraction, released count)``."""
        raise NotImplementedError

    def select(self, scores: np.ndarray, eps: float, sensitivity: float) -> int:
        """Exponential mechanism, Gumbel-max form (candidates scored ``-inf`` never win)."""
        raise NotImplementedError

    def permute_and_flip(self, scores: np.ndarray, eps: float, sensitivity: float) -> int:
        """Permute-and-flip as report-noisy-max with exponential noise."""
        raise NotImplementedError


class ResearchNoise(NoiseSource):
    """Research mode: numpy's generator (seeded, reproducible; bit-for-bit the
    samplers of :func:`gaussian_noise`, :func:`exponential_mechanism` and
    :func:`report_noisy_max_exponential`)."""

    mode = "research"
    noise = "continuous Gaussian (research mode)"
    selection_source = "Gumbel/exponential noise from numpy's generator (research mode)"

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def gaussian(self, std, size):
        return gaussian_noise(self.rng, std, size)

    def measure(self, exact, std):
        return exact + gaussian_noise(self.rng, std, exact.size)

    def noisy_fraction(self, fraction, n, std):
        a = float(np.clip(fraction + gaussian_noise(self.rng, std, 1)[0], 0.0, 1.0))
        return a, n * a

    def select(self, scores, eps, sensitivity):
        return exponential_mechanism(scores, eps, sensitivity, self.rng)

    def permute_and_flip(self, scores, eps, sensitivity):
        return report_noisy_max_exponential(scores, eps, sensitivity, self.rng)


class ReleaseNoise(NoiseSource):
    """Release mode: OpenDP's exact samplers, whose random bits come from
    OpenSSL's ``RAND_bytes`` (a CSPRNG seeded by the operating system; the
    OpenDP wheel is built with its ``use-openssl`` feature). Cannot be seeded.

    * Measurements: ``make_gaussian`` on integer vectors samples the discrete
      Gaussian ``N_Z(0, s^2)`` (Canonne, Kamath, Steinke 2020) exactly, with no
      floating-point arithmetic on the noise; it is ``d^2 / (2 s^2)``-zCDP like
      the continuous one, and its variance is at most ``s^2`` (equal to within
      ``1e-8`` relative for ``s >= 1``). Counts must be integers.
    * Selection: ``make_noisy_max`` with scale ``2 Delta / eps``: Gumbel noise
      under zCDP (the exponential mechanism, ``eps^2 / 8``) or exponential
      noise under pure DP (permute-and-flip, ``eps``-DP), each sampled exactly.
    """

    mode = "release"
    noise = "discrete Gaussian on integer counts (OpenDP make_gaussian, OpenSSL CSPRNG; release mode)"
    selection_source = "noise sampled exactly by OpenDP make_noisy_max from OpenSSL's CSPRNG (release mode)"

    def __init__(self):
        import opendp.prelude as dp  # imported on first use: research runs never need it

        dp.enable_features("contrib")
        self._dp = dp
        self._cache: dict = {}

    def _gaussian_measurement(self, std: float):
        key = ("gaussian", float(std))
        if key not in self._cache:
            if not (std > 0 and math.isfinite(std)):
                raise ConfigError(f"Discrete Gaussian noise needs a positive finite scale, got {std!r}.")
            dp = self._dp
            space = dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="f64")
            self._cache[key] = dp.m.make_gaussian(*space, scale=float(std))
        return self._cache[key]

    def _max_measurement(self, kind: str, scale: float):
        key = (kind, float(scale))
        if key not in self._cache:
            if not (scale > 0 and math.isfinite(scale)):
                raise ConfigError(f"Noisy max needs a positive finite scale, got {scale!r}.")
            dp = self._dp
            space = dp.vector_domain(dp.atom_domain(T="f64", nan=False)), dp.linf_distance(T="f64")
            measure = dp.zero_concentrated_divergence() if kind == "gumbel" else dp.max_divergence()
            self._cache[key] = dp.m.make_noisy_max(*space, measure, scale=float(scale))
        return self._cache[key]

    @staticmethod
    def _counts(exact) -> np.ndarray:
        exact = np.asarray(exact, dtype=float)
        counts = np.rint(exact)
        if not np.all(np.abs(exact - counts) <= 1e-6 * np.maximum(1.0, np.abs(exact))):
            raise ConfigError("Release mode measures integer counts, but this query's answer is "
                              "not a whole number.",
                              hint="Use research mode for weighted or fractional queries.")
        return counts.astype(np.int64)

    def gaussian(self, std, size):
        return self.measure(np.zeros(int(size)), std)

    def measure(self, exact, std):
        counts = self._counts(exact)
        noisy = self._gaussian_measurement(std)(counts)
        return np.asarray(noisy, dtype=np.int64).astype(float)

    def noisy_fraction(self, fraction, n, std):
        # the query as an integer count (sensitivity 1), noise of std n * std in counts
        count = self._counts([fraction * n])
        noisy = self._gaussian_measurement(n * std)(count)[0]
        released = float(min(max(noisy, 0), n))
        return released / n, released

    def _argmax(self, kind, scores, eps, sensitivity):
        scores = np.asarray(scores, dtype=float)
        live = np.flatnonzero(scores > -np.inf)
        if live.size == 0:
            raise ConfigError("Selection needs at least one candidate.")
        if live.size == 1:
            return int(live[0])
        pick = self._max_measurement(kind, 2.0 * sensitivity / eps)(np.ascontiguousarray(scores[live]))
        return int(live[int(pick)])

    def select(self, scores, eps, sensitivity):
        return self._argmax("gumbel", scores, eps, sensitivity)

    def permute_and_flip(self, scores, eps, sensitivity):
        return self._argmax("exponential", scores, eps, sensitivity)


def noise_source(mode: str, rng: np.random.Generator) -> NoiseSource:
    """The run's :class:`NoiseSource`: research mode draws from ``rng``; release
    mode ignores it (``rng`` then only serves data-independent randomness such as
    sampling synthetic records from the fitted model)."""
    if mode == "research":
        return ResearchNoise(rng)
    if mode == "release":
        return ReleaseNoise()
    raise ConfigError(f"Unknown run mode {mode!r}.", hint="Use 'research' or 'release'.")


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
