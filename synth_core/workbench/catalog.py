"""What the pages offer to choose from: epsilon and delta grids, mechanisms and
their parameters, workload builders, domain sources. No session state."""

from __future__ import annotations

import inspect
import math
from typing import Sequence

from ..api import RunConfig
from ..errors import WorkloadError
from ..mechanisms import MECHANISMS
from ..privacy import MAX_EPSILON, MIN_RUN_EPSILON
from ..report import domain_note

#: epsilon choices of the log-scale slider
EPSILON_GRID = (0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 30.0,
                50.0, 100.0)


def parse_epsilons(values: Sequence) -> tuple[list[float], list[str]]:
    """An epsilon grid picked from :data:`EPSILON_GRID` or typed in: (the
    values from :data:`~synth_core.privacy.MIN_RUN_EPSILON` up to
    :data:`~synth_core.privacy.MAX_EPSILON`, sorted, each once; the entries
    that are not one, as typed)."""
    good, bad = set(), []
    for value in values:
        try:
            e = float(value)
        except (TypeError, ValueError):
            bad.append(str(value))
            continue
        if MIN_RUN_EPSILON <= e <= MAX_EPSILON:
            good.add(e)
        else:
            bad.append(str(value))
    return sorted(good), bad


#: delta choices
DELTA_GRID = (1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-12)

#: What the Workload and budget page sets: exactly a run's configuration
#: (frozen; the page replaces it with ``dataclasses.replace``). ``rounds=None``
#: means the mechanism's default.
RunSettings = RunConfig

DOMAIN_SOURCE_TEXT = {
    "declared": "declared (a schema file): does not depend on the private data",
    "public": "read off the public rows: does not depend on the private data",
    "private": "read off the private table: domain not privacy-protected",
}


def describe_domain(source: str) -> str:
    """What a domain source means for privacy (the release report's note)."""
    return domain_note(source)


def mechanism_parameters(name: str) -> dict[str, object]:
    """A mechanism's declared options and their defaults (the mechanisms' defaults)."""
    return {o.name: o.default for o in MECHANISMS[name].options if o.name != "public_columns"}


def mechanism_description(name: str) -> str:
    """The first line of the mechanism module's docstring (its paper)."""
    cls = MECHANISMS[name]
    doc = (inspect.getmodule(cls).__doc__ or cls.__doc__ or name).strip()
    return " ".join(doc.split("\n\n")[0].split())


def supports_public_columns(name: str) -> bool:
    """Whether the mechanism uses public columns (its declared capabilities)."""
    return MECHANISMS[name].capabilities.uses_public_columns


def planned_rounds(s: RunSettings) -> int | None:
    """The rounds a run with settings ``s`` plans: 0 for the public-only
    baseline, ``s.rounds`` when set, else the mechanism's default (None when it adapts)."""
    if s.mechanism == "public-only":
        return 0
    if s.rounds is not None:
        return s.rounds
    default = mechanism_parameters(s.mechanism).get("rounds")
    return default if isinstance(default, int) else None


def workload_spec(kind: str, *, k: int = 3, targets: Sequence[str] = (),
                  custom: Sequence[tuple[Sequence[str], float]] = ()) -> str:
    """The ``parse_workload`` spec of a workload builder's choice.

    ``kind`` is ``all`` (all k-way), ``target`` (k-way containing a target
    column) or ``custom`` (a list of (columns, weight) pairs).
    """
    if kind == "all":
        return f"all-{int(k)}way"
    if kind == "target":
        if not targets:
            raise WorkloadError("Choose at least one target column.",
                                hint="Pick the column(s) the marginals must contain.")
        return f"target:{'+'.join(targets)}:{int(k)}"
    if kind == "custom":
        items = []
        for cols, weight in custom:
            cols = [c for c in cols if c]
            if not cols:
                continue
            item = ",".join(cols)
            if weight is None or not float(weight) > 0 or not math.isfinite(float(weight)):
                raise WorkloadError(f"The weight of marginal {item} must be a positive number, "
                                    f"got {weight!r}.")
            if float(weight) != 1.0:
                item += f"*{float(weight):g}"
            items.append(item)
        if not items:
            raise WorkloadError("The custom workload is empty.",
                                hint="Add at least one marginal (a list of columns).")
        return ";".join(items)
    raise WorkloadError(f"Unknown workload kind {kind!r}.")
