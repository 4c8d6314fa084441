"""The guided mechanism list: which mechanisms fit the public information marked.

A *choice* is a mechanism, or the conditional-generation variant of one whose
capabilities declare ``conditional`` ("Conditional AIM": the run's option
``conditional=True``). Whether a choice fits the session is read off the
mechanism's declared :class:`~synth_core.mechanisms.base.Capabilities` and
nothing else:

* ``needs_public_rows`` and no public rows marked: refused;
* public columns marked and ``public_columns == NO``: refused;
* public columns marked, ``public_columns_conditional_only`` and not the
  conditional variant: refused (the conditional variant is the way);
* ``needs_public_columns`` or the conditional variant, and no public columns: refused;
* the run's neighbour relation not among ``neighbours`` (``conditional_neighbours``
  for a conditional variant): refused.

The reasons name the control on the workbench's pages that changes the
verdict, never a command-line flag.

The Workload page lists every entry (an unavailable one marked so). The
Compare page and the what-if preview pick several entries in one list
(:class:`ChoiceList`): only the available ones are offered, the others are
named with their reasons beside it, and a job of a conditional entry runs its
mechanism with ``conditional=True`` (:meth:`MechanismChoice.run_options`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..errors import ConfigError, render_controls
from ..mechanisms import MECHANISMS
from ..mechanisms.base import Capabilities


@dataclass(frozen=True)
class MechanismChoice:
    """One entry of the mechanism list: a mechanism, or its conditional variant."""

    mechanism: str
    conditional: bool = False

    @property
    def key(self) -> str:
        """The entry's widget value: the registry name, ``+conditional`` for the variant."""
        return f"{self.mechanism}+conditional" if self.conditional else self.mechanism

    @property
    def title(self) -> str:
        """The full name people read: "Conditional AIM", "JAM-PGM"."""
        return MECHANISMS[self.mechanism].display_name(self.conditional)

    @property
    def capabilities(self) -> Capabilities:
        return MECHANISMS[self.mechanism].capabilities

    def options(self, options: Mapping[str, Any]) -> dict:
        """``options`` with the variant's ``conditional`` switch (absent for the
        plain mechanism, so a saved ``condition_max_mb`` alone is dropped too)."""
        out = {k: v for k, v in options.items()
               if k not in ("conditional", "condition_max_mb")}
        if self.conditional:
            out["conditional"] = True
            if "condition_max_mb" in options:
                out["condition_max_mb"] = options["condition_max_mb"]
        return out


    def run_options(self, options: Mapping[str, Any]) -> dict:
        """The options a run of this entry takes from a session's ``options``:
        those its mechanism declares (public columns apart: they come with the
        data), with the variant's ``conditional`` switch (:meth:`options`)."""
        declared = MECHANISMS[self.mechanism].option_defaults()
        return self.options({k: v for k, v in options.items()
                             if k in declared and k != "public_columns"})


def mechanism_choices() -> list[MechanismChoice]:
    """Every mechanism in registry order, each followed by its conditional variant."""
    out = []
    for name in MECHANISMS:
        out.append(MechanismChoice(name))
        if MECHANISMS[name].capabilities.conditional:
            out.append(MechanismChoice(name, conditional=True))
    return out


def choice_by_key(key: str) -> MechanismChoice:
    name, _, variant = key.partition("+")
    return MechanismChoice(name, conditional=variant == "conditional")


def parse_choices(keys: Sequence[str]) -> list[MechanismChoice]:
    """The entries of ``keys`` (``aim``, ``aim+conditional``, ...); ConfigError
    for a key that is no entry of the list."""
    known = {c.key: c for c in mechanism_choices()}
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise ConfigError(f"Unknown mechanism(s): {', '.join(map(str, unknown))}.",
                          hint=f"Available: {', '.join(known)}.")
    return [known[k] for k in keys]


def key_title(key: str) -> str:
    """The full name of an entry's key ("Conditional AIM" for ``aim+conditional``);
    a label that is no entry of the list stays as it is."""
    try:
        return parse_choices([key])[0].title
    except ConfigError:
        return key


def choice_of(mechanism: str, options: Mapping[str, Any]) -> MechanismChoice:
    """The list entry of a run's mechanism and options."""
    caps = MECHANISMS[mechanism].capabilities
    return MechanismChoice(mechanism, caps.conditional and bool(options.get("conditional")))


def mechanism_title(mechanism: str, options: Mapping[str, Any]) -> str:
    """The full name of a run's mechanism ("Conditional AIM" for aim with ``conditional``)."""
    return choice_of(mechanism, options).title


@dataclass(frozen=True)
class ChoiceFit:
    """How a choice fits the public information marked and the neighbour relation."""

    choice: MechanismChoice
    #: what it does with what is marked ("uses the public rows", ...)
    uses: str
    #: short refusal ("needs public rows"); empty when the choice is available
    refusal: str = ""
    #: the refusal in full, naming the control that changes it as a placeholder
    #: (:func:`~synth_core.errors.render_controls`; :meth:`reason_in` names it)
    reason: str = ""

    @property
    def available(self) -> bool:
        return not self.refusal

    def reason_in(self, interface: str) -> str:
        """The full refusal with its control named as ``interface`` names it."""
        return render_controls(self.reason, interface) or ""

    @property
    def label(self) -> str:
        """The list's text for the choice."""
        if self.available:
            return f"{self.choice.title}: {self.uses}"
        return f"{self.choice.title} (unavailable: {self.refusal})"


def _uses(choice: MechanismChoice, rows: bool, columns: bool) -> str:
    """What the choice does with the public information marked."""
    caps = choice.capabilities
    if caps.zero_budget:
        return "the public rows alone, no privacy budget"
    parts = []
    if rows:
        parts.append("uses the public rows" if caps.public_rows else "ignores the public rows")
    if columns:
        parts.append("keeps each record's public column values" if choice.conditional
                     else "uses the public columns")
    if not parts:
        return "needs no public information"
    return ", ".join(parts)


def _refusal(choice: MechanismChoice, rows: bool, columns: bool,
             neighbours: str | None) -> tuple[str, str]:
    """(short, full) refusal of the choice, or ("", "") when it fits."""
    caps, title = choice.capabilities, choice.title
    if caps.needs_public_rows and not rows:
        return ("needs public rows",
                f"{title} is built on public rows: give them ({{public_rows}}).")
    if columns and not caps.uses_public_columns:
        return ("does not use public columns",
                f"{title} treats every column as private and refuses public columns: clear "
                "{public_columns}, or choose an entry that uses them.")
    if columns and caps.public_columns_conditional_only and not choice.conditional:
        conditional = MechanismChoice(choice.mechanism, True).title
        return ("public columns only with conditional generation",
                f"{title} treats every column as private; it takes public columns only to "
                f"generate conditionally. Choose {conditional} (each record keeps its public "
                "values), or clear {public_columns}.")
    if not columns and (caps.needs_public_columns or choice.conditional):
        return ("needs public columns",
                f"{title} is built on public columns: mark them ({{public_columns}}).")
    relations = caps.conditional_neighbours if choice.conditional else caps.neighbours
    if neighbours is not None and neighbours not in relations:
        allowed = " or ".join(relations)
        return (f"{allowed} neighbours only",
                f"{title} is defined for {allowed} neighbouring datasets only: choose "
                f"{allowed} ({{neighbours}}).")
    return "", ""


def choice_fit(choice: MechanismChoice, *, public_rows: bool, public_columns: bool,
               neighbours: str | None = None) -> ChoiceFit:
    """How ``choice`` fits: public rows marked or not, public columns marked or
    not, and (when given) the run's neighbour relation."""
    refusal, reason = _refusal(choice, public_rows, public_columns, neighbours)
    return ChoiceFit(choice, _uses(choice, public_rows, public_columns), refusal, reason)


def guided_choices(*, public_rows: bool, public_columns: bool,
                   neighbours: str | None = None) -> list[ChoiceFit]:
    """The whole list with each entry's fit."""
    return [choice_fit(c, public_rows=public_rows, public_columns=public_columns,
                       neighbours=neighbours) for c in mechanism_choices()]


@dataclass(frozen=True)
class ChoiceList:
    """A pick of several entries (Compare page, what-if preview): the available
    ones are offered, the unavailable ones named with their reasons."""

    fits: tuple[ChoiceFit, ...]

    @property
    def keys(self) -> list[str]:
        """The keys of the entries offered (the available ones), in list order."""
        return [f.choice.key for f in self.fits if f.available]

    @property
    def unavailable(self) -> list[ChoiceFit]:
        return [f for f in self.fits if not f.available]

    @staticmethod
    def title(key: str) -> str:
        return key_title(key)

    def defaults(self, preferred: Sequence[str]) -> list[str]:
        """The ``preferred`` keys that are offered, else the first one offered."""
        picked = [k for k in dict.fromkeys(preferred) if k in self.keys]
        return picked or self.keys[:1]

    def unavailable_text(self, marked: str) -> str | None:
        """One line naming each entry left out and why ("Not available with
        ``marked``: Conditional AIM (needs public columns); ..."); None when
        every entry is offered."""
        if not self.unavailable:
            return None
        return (f"Not available with {marked}: "
                + "; ".join(f"{f.choice.title} ({f.refusal})" for f in self.unavailable) + ".")

    def check(self, keys: Sequence[str]) -> list[MechanismChoice]:
        """The entries of ``keys``; ConfigError (the full reason) for an unknown
        or unavailable one."""
        choices = parse_choices(keys)
        fits = {f.choice.key: f for f in self.fits}
        for c in choices:
            if not fits[c.key].available:
                raise ConfigError(f"{c.title} is not available here ({fits[c.key].refusal}).",
                                  hint=fits[c.key].reason)
        return choices


def choice_list(*, public_rows: bool, public_columns: bool,
                neighbours: str | None = None) -> ChoiceList:
    """The pick list for the public information marked and the neighbour relation."""
    return ChoiceList(tuple(guided_choices(public_rows=public_rows, public_columns=public_columns,
                                           neighbours=neighbours)))
