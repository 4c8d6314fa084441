"""The mechanism contract: what a mechanism declares and what the API asks of it.

Every mechanism is a subclass of :class:`Mechanism` (through one of its two
loop protocols) that declares, as class attributes:

* ``name``: the registry name (CLI ``--mechanism``, API, reports, charts);
* ``title``: its name for people on the workbench's pages ("JAM-PGM"; the
  conditional variant reads "Conditional <title>");
* ``capabilities``: a :class:`Capabilities` record (public rows, public
  columns no / optional / required, conditional generation, neighbour
  relations, what it releases, whether it spends budget);
* ``options``: a tuple of :class:`Option` records, exactly the keyword
  arguments of its constructor (name, type, default, help). The CLI's
  ``--option KEY=VALUE``, :func:`~synth_core.mechanisms.make_mechanism` and
  the app's Workload page read this table, never the constructor's signature.

What a run asks of a mechanism is a method of :class:`Mechanism` with a
default, so the API never tests for an attribute: ``conditional_on``,
``run_warnings()``, ``conditioning_report()``, ``sample(...)``,
``score_terms(...)`` and the report's ``selection`` text.

**Adding a mechanism that uses public columns** (one file plus its test):

1. ``synth_core/mechanisms/my_mech.py``: a subclass of
   :class:`AdaptiveMechanism` (Private-PGM: implement ``plan``,
   ``candidates``, ``scores``; optionally ``initialise``, ``initial_noise``,
   ``after_round``, ``public_answer``) or of
   :class:`~synth_core.mechanisms.query_release.QueryReleaseMechanism`
   (implement ``run`` and ``sample``). Set ``capabilities =
   Capabilities(public_columns=OPTIONAL, ...)`` (``REQUIRED`` when the
   public columns are what it is for) and list its constructor's keyword
   arguments in ``options``, ``public_columns`` among them. Hold the columns
   in ``self.vertical = ConditionalSetup.create(...)``
   (:mod:`synth_core.conditional`): the defaults below then answer exact
   public cliques, report the conditioning block, keep the public values
   when generating conditionally and pass on the setup's warnings. If its
   scores have the form ``w_c (||M_c(D) - M_c(p)||_1 - o_c)``, return
   ``ScoreTerms(w_c, o_c)`` from ``score_terms`` and compute ``scores`` from
   them (the release's section-5 bounds use the same terms).
2. Register it in ``REGISTRY`` (``synth_core/mechanisms/__init__.py``): its name,
   module and class (``MECHANISMS`` imports the class on first use).
3. ``tests/test_my_mech.py``: its privacy arithmetic and behaviour;
   give it a few cheap rounds in ``SMALL`` of tests/test_mechanism_contract.py,
   which then checks its option table against its constructor and its
   declared capabilities against its runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Sequence

import numpy as np
import pandas as pd

from ..conditional import CONDITION_MAX_MB, ConditionalSetup, generate_conditionally
from ..engine import DEFAULT_FIT_ITERS, Candidate, RoundPlan, RunState
from ..errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from ..engine import RunLoop
    from ..model import FittedModel

Clique = tuple[str, ...]

#: ``Capabilities.public_columns``: refuses them / uses them when given / built for them
NO, OPTIONAL, REQUIRED = "no", "optional", "required"
#: ``Capabilities.neighbours``: the neighbour relations a mechanism is defined under
BOUNDED, UNBOUNDED = "bounded", "unbounded"
#: ``Capabilities.releases``: what the run's synthetic records are drawn from
PGM_MODEL = "Private-PGM model"
QUERY_ANSWERS = "query answers"
PUBLIC_ROWS = "public rows"


def require_public_rows(state: RunState, title: str, instead: str | None = None) -> None:
    """ConfigError unless the run has public rows (a public table, or rows a flag
    column marks) and at least one of them; ``instead``: a mechanism to suggest."""
    public = state.data.public
    if public is None or public.n == 0:
        given = "" if public is None else " (the public rows given are empty)"
        raise ConfigError(f"{title} needs public rows{given}.",
                          hint="Give public rows ({public_rows})"
                               + (f", or choose {instead}" if instead else "") + ".")


@dataclass(frozen=True)
class Capabilities:
    """What a mechanism does with public information and what it releases.

    ``public_rows``: it reads public rows (else they are ignored and left out of
    the release's claims). ``public_columns``: :data:`NO` (a run with public
    columns is refused), :data:`OPTIONAL` (used when given) or :data:`REQUIRED`
    (what it is for: sweeps give it the dataset's public columns by default).
    ``public_columns_variant``: for a mechanism with ``NO``, the one to choose
    instead (the refusal's hint). ``conditional``: it can generate conditionally
    on public columns (option ``conditional``); ``public_columns_conditional_only``:
    it takes public columns only to generate conditionally (a run with them and
    without ``conditional`` is refused); ``conditional_neighbours``: the neighbour
    relations of conditional generation (bounded: every record keeps its public
    values, so ``n`` is public). ``neighbours``: the neighbour
    relations it is defined under (its run refuses the others with ConfigError
    when it starts). ``releases``: :data:`PGM_MODEL` (it fits a
    Private-PGM model in the :class:`~synth_core.engine.Engine`),
    :data:`QUERY_ANSWERS` (it measures counting queries in its own rounds,
    :class:`~synth_core.mechanisms.query_release.QueryReleaseLoop`) or
    :data:`PUBLIC_ROWS`. ``zero_budget``: it never reads the private table.
    """

    public_rows: bool = False
    public_columns: str = NO
    public_columns_variant: str = ""
    conditional: bool = False
    public_columns_conditional_only: bool = False
    conditional_neighbours: tuple[str, ...] = (BOUNDED,)
    neighbours: tuple[str, ...] = (BOUNDED, UNBOUNDED)
    releases: str = PGM_MODEL
    zero_budget: bool = False

    def __post_init__(self):
        if self.public_columns not in (NO, OPTIONAL, REQUIRED):
            raise ValueError(f"public_columns must be one of {NO}, {OPTIONAL}, {REQUIRED}")
        if self.releases not in (PGM_MODEL, QUERY_ANSWERS, PUBLIC_ROWS):
            raise ValueError(f"unknown release kind {self.releases!r}")

    @property
    def uses_public_columns(self) -> bool:
        return self.public_columns != NO

    @property
    def needs_public_rows(self) -> bool:
        """Whether a run without public rows is refused: every mechanism that
        reads public rows is built on them (its candidates, support or release
        come from them)."""
        return self.public_rows

    @property
    def needs_public_columns(self) -> bool:
        """Whether public columns are what it is for (:data:`REQUIRED`)."""
        return self.public_columns == REQUIRED

    @property
    def own_rounds(self) -> bool:
        """Whether it runs its own rounds (query release) instead of the Engine's."""
        return self.releases == QUERY_ANSWERS


@dataclass(frozen=True)
class Option:
    """One keyword argument of a mechanism's constructor.

    ``type`` is ``int``, ``float``, ``bool`` or ``str``; ``tuple`` for a list
    (given as a list or as a comma-separated string, parsed by the mechanism).
    ``default`` is the constructor's default (``None``: the mechanism decides,
    e.g. from the data).
    """

    name: str
    type: type
    default: Any
    help: str

    def parse(self, text: str):
        """The value of ``--option name=text`` (the CLI): by the declared type."""
        if self.type is bool:
            low = text.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ConfigError(f"Option {self.name} is on/off, got {text!r}.",
                              hint=f"Use {self.name}=true or {self.name}=false.")
        if self.type is tuple:
            return self._parse_list(text)
        if self.type in (int, float):
            try:
                return int(text) if self.type is int else float(text)
            except ValueError:
                raise ConfigError(f"Option {self.name} takes a{'n integer' if self.type is int else ' number'}"
                                  f", got {text!r}.", hint=f"{self.name}: {self.help}") from None
        return text

    def check_value(self, value) -> None:
        """ConfigError unless ``value`` has the declared type (``None`` where the
        default is ``None``; an int for a float; a list, tuple or text for a list):
        a wrong type raised a raw TypeError in the constructor, after a sweep's
        reservation."""
        if value is None and self.default is None:
            return
        ok = {bool: lambda v: isinstance(v, (bool, np.bool_)),
              int: lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, bool),
              float: lambda v: isinstance(v, (int, float, np.integer, np.floating))
              and not isinstance(v, bool),
              str: lambda v: isinstance(v, str),
              tuple: lambda v: isinstance(v, (list, tuple, str))}[self.type]
        if not ok(value):
            kind = {bool: "true or false", int: "an integer", float: "a number", str: "text",
                    tuple: "a list (or comma-separated text)"}[self.type]
            raise ConfigError(f"Option {self.name} takes {kind}, got {value!r}.",
                              hint=f"{self.name}: {self.help}")

    def _parse_list(self, text: str) -> tuple:
        """``a,b`` as a tuple: of integers when every item is one (``16,16`` ->
        ``(16, 16)``, as the API takes it), else of the stripped items."""
        items = tuple(t.strip() for t in text.split(","))
        try:
            return tuple(int(t) for t in items)
        except ValueError:
            return items


#: the option every mechanism that uses public columns declares
PUBLIC_COLUMNS_OPTION = Option("public_columns", tuple, (),
                               "columns known for every record (a list, or 'a,b')")
#: ``max_model_size`` of the Private-PGM mechanisms (MB)
MAX_MODEL_SIZE_OPTION = Option("max_model_size", float, 80.0,
                               "Private-PGM model size limit in MB")
#: conditional generation (AIM and vJAM-PGM)
CONDITIONAL_OPTIONS = (
    Option("conditional", bool, False,
           "generate conditionally: records keep their public values, private ones are drawn "
           "from the model given them (needs public columns)"),
    Option("condition_max_mb", float, CONDITION_MAX_MB,
           "model-size bound of the exact conditioning marginals (MB)"),
)




@dataclass(frozen=True)
class ScoreTerms:
    """A selection score of the form ``weight (||M_c(D) - M_c(p)||_1 - offset)``.

    ``offset`` is the expected error left after measuring ``c`` (e.g. the
    expected noise ``sqrt(2/pi) sigma n_c``); ``None`` when it depends on the
    private data (JAM-PGM's public-row proxy): unknown, but ``>= 0``.
    """

    weight: float
    offset: float | None

    def score(self, current_error: float) -> float:
        """The score, given ``||M_c(D) - M_c(p)||_1`` (and a known offset)."""
        return self.weight * (current_error - self.offset)


#: the range a budget share (JAM-PGM's and GEM's ``alpha``) must lie in: a share of
#: 1e-320 gave a noise scale that overflowed a float after the budget was spent
BUDGET_SHARE_RANGE = (1e-3, 1 - 1e-3)


def check_budget_share(value: float, what: str) -> float:
    """``value`` as a float, or ConfigError unless it lies in :data:`BUDGET_SHARE_RANGE`."""
    low, high = BUDGET_SHARE_RANGE
    hint = "The papers' values are 0.8 (JAM-PGM) and 0.67 (GEM)."
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"alpha ({what}) must be a number, not {value!r}.", hint=hint)
    if not low <= value <= high:
        raise ConfigError(f"alpha ({what}) must lie between {low:g} and {high:g}, got {value}.",
                          hint=hint)
    return float(value)


class Mechanism(ABC):
    """The base protocol of every mechanism (see the module docstring for the contract).

    Each method here has a default that is right for a mechanism without
    public columns that fits a Private-PGM model; a mechanism overrides the
    ones its capabilities change.
    """

    name: ClassVar[str] = ""
    #: how the pages and reports name it for people ("JAM-PGM"); the registry name if empty
    title: ClassVar[str] = ""
    capabilities: ClassVar[Capabilities] = Capabilities()
    options: ClassVar[tuple[Option, ...]] = ()
    #: how the report names the selection step
    selection: ClassVar[str] = "exponential mechanism (Gumbel-max)"
    #: mirror-descent iterations of each round's Private-PGM fit when the run sets none
    #: (a fit also stops once converged, see PGMEstimator's ``tol``); the run's
    #: resolved configuration shows it for every mechanism
    fit_iters: ClassVar[int] = DEFAULT_FIT_ITERS
    #: import names of optional packages the mechanism needs (an extra of the install)
    requires: ClassVar[tuple[str, ...]] = ()
    #: the public-column side of a mechanism that takes public columns
    #: (:class:`~synth_core.conditional.ConditionalSetup`); ``None`` otherwise
    vertical: ConditionalSetup | None = None

    @classmethod
    def display_name(cls, conditional: bool = False) -> str:
        """The mechanism's name for people, ``Conditional <title>`` for its
        conditional-generation variant."""
        title = cls.title or cls.name
        return f"Conditional {title}" if conditional else title

    # -- declared options ---------------------------------------------------------

    @classmethod
    def option(cls, name: str) -> Option:
        """The declared option ``name`` (ConfigError naming the valid ones)."""
        for opt in cls.options:
            if opt.name == name:
                return opt
        valid = ", ".join(o.name for o in cls.options) or "none"
        raise ConfigError(f"{cls.name} has no option {name!r}.",
                          hint=f"Its options: {valid} (docs/mechanisms.md).")

    @classmethod
    def option_defaults(cls) -> dict[str, Any]:
        return {o.name: o.default for o in cls.options}

    @classmethod
    def check_options(cls, options: Mapping[str, Any]) -> None:
        """ConfigError for an option the mechanism does not declare, for public
        columns given to one that does not use them, and for conditional generation
        asked of one that has none."""
        caps = cls.capabilities
        if options.get("public_columns") and not caps.uses_public_columns:
            variant = caps.public_columns_variant
            raise ConfigError(f"{cls.name} does not use public columns.",
                              hint=f"Its variant for public columns is {variant}." if variant
                              else "Choose vjam-pgm or conditional aim (--conditional), or run "
                                   "without public columns.")
        if options.get("conditional") and not caps.conditional:
            raise ConfigError(f"{cls.name} has no conditional generation.",
                              hint="Conditional generation is offered for aim and vjam-pgm.")
        for key in options:
            if key == "public_columns" and not options[key]:
                continue  # none given: nothing to pass on
            cls.option(key).check_value(options[key])

    @classmethod
    def check_relation(cls, neighbours: str, options: Mapping[str, Any]) -> None:
        """ConfigError, before any data is read, for a neighbour relation the
        mechanism is not defined under (:attr:`Capabilities.neighbours`, or
        ``conditional_neighbours`` with ``conditional``). A run refused here
        reserves no budget, so it fixes no table's relation."""
        caps = cls.capabilities
        conditional = bool(options.get("conditional"))
        relations = caps.conditional_neighbours if conditional else caps.neighbours
        if neighbours not in relations:
            title = f"Conditional {cls.title}" if conditional else cls.title
            raise ConfigError(f"{title} is defined under {' or '.join(relations)} DP only, "
                              f"not {neighbours}.",
                              hint=f"Choose {{neighbours}} {relations[0]}.")

    @classmethod
    def build(cls, **options) -> "Mechanism":
        """The mechanism with checked options (defaults for the rest)."""
        cls.check_options(options)
        if not cls.capabilities.uses_public_columns:
            options.pop("public_columns", None)
        return cls(**options)

    def check_columns(self, columns: Sequence[str]) -> None:
        """ConfigError for settings the table's columns (the domain's names, in
        order) make impossible, checked before any budget is reserved; nothing to
        check by default."""

    # -- what a run asks after its rounds ---------------------------------------------

    def rounds_planned(self, state: RunState) -> int | None:
        return None

    @property
    def conditional_on(self) -> tuple[str, ...]:
        """The public columns the synthetic records keep (conditional generation)."""
        return () if self.vertical is None else self.vertical.conditional_on

    def run_warnings(self) -> list[str]:
        """What the run should tell the user (shown and put in the report)."""
        return [] if self.vertical is None else list(self.vertical.warnings)

    def conditioning_report(self) -> dict | None:
        """The report's ``conditional_generation`` block (``None``: not conditional)."""
        return None if self.vertical is None else self.vertical.to_report()

    def sample(self, loop: "RunLoop", rows: int, rng: np.random.Generator,
               public_codes: Callable[[Sequence[str]], pd.DataFrame]) -> pd.DataFrame:
        """``rows`` synthetic records (integer codes) after the run.

        Default: from the fitted Private-PGM model; when generating conditionally,
        each record keeps its public codes (``public_codes(columns)``, the private
        table's own) and its private codes are drawn from the model given them.
        """
        conditional_on = self.conditional_on
        if conditional_on:
            return generate_conditionally(loop.model, public_codes(conditional_on),
                                          conditional_on, rng)
        return loop.model.sample(rows, int(rng.integers(2 ** 32)))

    def score_terms(self, state: RunState, plan: RoundPlan, candidate: Candidate) -> ScoreTerms | None:
        """The terms of ``candidate``'s selection score (its sensitivity is
        ``plan.sensitivity``); ``None`` when the scores do not have that form."""
        return None


class AdaptiveMechanism(Mechanism):
    """A Private-PGM mechanism: the hooks the :class:`~synth_core.engine.Engine` calls."""

    #: Private-PGM's marginal oracle for the fits (``auto``, ``hugin``, ``implicit``;
    #: :class:`~synth_core.model.PGMEstimator`)
    fit_oracle: str = "auto"

    def initialise(self, state: RunState) -> list[Candidate]:
        """Marginals measured before the first round (charged by the engine)."""
        return []

    def initial_noise(self, state: RunState) -> tuple[float, float]:
        """(noise std, fit std) of the initial private measurements."""
        raise NotImplementedError(f"{self.name} measures nothing private at the initialisation")

    @abstractmethod
    def plan(self, state: RunState) -> RoundPlan | None:
        """Budget of the next round, or ``None`` to stop."""

    @abstractmethod
    def candidates(self, state: RunState, plan: RoundPlan) -> list[Candidate]:
        """The candidate pool of this round."""

    @abstractmethod
    def scores(self, state: RunState, plan: RoundPlan, candidates: Sequence[Candidate]) -> np.ndarray:
        """Scores (higher = more worth measuring), from private data: curator-only."""

    def after_round(self, state: RunState, plan: RoundPlan, chosen: Candidate,
                    before: "FittedModel", after: "FittedModel") -> None:
        """Hook after the model was refitted (e.g. AIM's annealing)."""

    def public_answer(self, state: RunState, clique: Clique) -> np.ndarray:
        """The exact answer of a public clique (from the table's public columns)."""
        if self.vertical is None:
            raise NotImplementedError(f"{self.name} has no public measurements")
        return self.vertical.public_answer(state, clique)
