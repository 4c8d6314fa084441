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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..mechanisms import MECHANISMS
from ..mechanisms.base import Capabilities

#: where the public information is marked (the hints name it)
PUBLIC_PAGE = "the Public information page"


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
    #: the refusal in full, naming the control that changes it
    reason: str = ""

    @property
    def available(self) -> bool:
        return not self.refusal

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
                f"{title} is built on public rows: add them under Public rows on {PUBLIC_PAGE}.")
    if columns and not caps.uses_public_columns:
        return ("does not use public columns",
                f"{title} treats every column as private and refuses public columns: clear "
                f"Public columns on {PUBLIC_PAGE}, or choose an entry that uses them.")
    if columns and caps.public_columns_conditional_only and not choice.conditional:
        conditional = MechanismChoice(choice.mechanism, True).title
        return ("public columns only with conditional generation",
                f"{title} treats every column as private; it takes public columns only to "
                f"generate conditionally. Choose {conditional} in this list (each record keeps "
                f"its public values), or clear Public columns on {PUBLIC_PAGE}.")
    if not columns and (caps.needs_public_columns or choice.conditional):
        return ("needs public columns",
                f"{title} is built on public columns: mark them under Public columns on "
                f"{PUBLIC_PAGE}.")
    relations = caps.conditional_neighbours if choice.conditional else caps.neighbours
    if neighbours is not None and neighbours not in relations:
        allowed = " or ".join(relations)
        return (f"{allowed} neighbours only",
                f"{title} is defined for {allowed} neighbouring datasets only: choose "
                f"{allowed} under Neighbouring datasets on the Workload and budget page.")
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
