"""Workloads: weighted lists of marginal queries (cliques of columns).

A clique is a tuple of column names in schema order. ``W+`` is the downward
closure of a workload (all non-empty subsets of its cliques), and AIM's
candidate weight of a clique ``r`` is ``w_r = sum_{s in W} c_s |r ∩ s|`` with
``c_s`` the workload weight of ``s``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from .errors import WorkloadError

#: the most cells a workload marginal may have: each is counted in full (8 bytes a cell)
MAX_MARGINAL_CELLS = 100_000_000

Clique = tuple[str, ...]


@dataclass(frozen=True)
class Workload:
    """An ordered list of distinct cliques with positive weights."""

    cliques: tuple[Clique, ...]
    weights: tuple[float, ...]
    description: str = "custom"

    def __post_init__(self):
        if not self.cliques:
            raise WorkloadError("The workload is empty.", hint="Choose at least one marginal.")
        if len(self.cliques) != len(self.weights):
            raise WorkloadError("Each workload clique needs exactly one weight.")
        if len(set(self.cliques)) != len(self.cliques):
            raise WorkloadError("The workload lists a marginal twice.")
        for cl, w in zip(self.cliques, self.weights):
            if not (w > 0 and math.isfinite(w)):
                raise WorkloadError(f"The weight of marginal {cl} must be a finite positive "
                                    f"number, got {w}.")

    def check_cells(self, sizes: dict[str, int]) -> None:
        """WorkloadError, naming the largest marginal and what to do, when a workload
        marginal has more than :data:`MAX_MARGINAL_CELLS` cells (``sizes``: each
        column's number of codes). Every workload marginal is counted in full, for
        scoring and for the report's error bounds: checked before a run spends."""
        # a column the domain lacks is the engine's error to name, not this check's
        cells = {cl: math.prod(sizes.get(c, 1) for c in cl) for cl in self.cliques}
        largest = max(cells, key=cells.get)
        if cells[largest] > MAX_MARGINAL_CELLS:
            big = sorted(largest, key=lambda c: -sizes.get(c, 1))
            raise WorkloadError(
                f"The workload marginal {' × '.join(largest)} has {cells[largest]:,} cells "
                f"(at most {MAX_MARGINAL_CELLS:,} are counted): "
                + ", ".join(f"'{c}' has {sizes.get(c, 1):,} values" for c in big) + ".",
                hint=f"Leave out a column with many values (an identifier: {{drop:{big[0]}}}), "
                     "bin it into fewer values, or choose a workload without this marginal.")

    def __len__(self) -> int:
        return len(self.cliques)

    def __iter__(self):
        return iter(zip(self.cliques, self.weights))

    @property
    def columns(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for cl in self.cliques:
            for c in cl:
                seen.setdefault(c, None)
        return tuple(seen)

    def downward_closure(self) -> tuple[Clique, ...]:
        return downward_closure(self.cliques)

    def candidate_weights(self) -> dict[Clique, float]:
        """AIM's weights ``w_r = sum_s c_s |r ∩ s|`` over the downward closure."""
        return {
            r: float(sum(w * len(set(r) & set(s)) for s, w in self))
            for r in self.downward_closure()
        }

    def restrict(self, keep) -> "Workload":
        """The sub-workload of cliques for which ``keep(clique)`` is true."""
        pairs = [(cl, w) for cl, w in self if keep(cl)]
        if not pairs:
            raise WorkloadError("No marginal of the workload is left after the restriction.")
        cls, ws = zip(*pairs)
        return Workload(tuple(cls), tuple(ws), self.description + " (restricted)")

    def to_json(self) -> dict:
        return {
            "description": self.description,
            "cliques": [list(c) for c in self.cliques],
            "weights": list(self.weights),
        }


def _canonical(clique: Iterable[str], order: Sequence[str]) -> Clique:
    index = {c: i for i, c in enumerate(order)}
    clique = list(clique)
    unknown = [c for c in clique if c not in index]
    if unknown:
        raise WorkloadError(
            f"The workload names unknown column(s): {', '.join(map(repr, unknown))}.",
            hint=f"Known columns: {', '.join(order)}.",
        )
    if len(set(clique)) != len(clique):
        raise WorkloadError(f"The marginal {tuple(clique)} names a column twice.")
    if not clique:
        raise WorkloadError("A workload marginal must name at least one column.")
    return tuple(sorted(clique, key=index.__getitem__))


def all_k_way(columns: Sequence[str], k: int) -> Workload:
    """All k-way marginals over ``columns``."""
    if not 1 <= k <= len(columns):
        raise WorkloadError(
            f"Cannot build all {k}-way marginals over {len(columns)} column(s).",
            hint=f"Choose marginals of 1 to {len(columns)} columns ({{workload}}, e.g. "
                 f"all-{min(2, len(columns))}way)." if columns else
                 "k must be between 1 and the number of columns.",
        )
    cliques = tuple(itertools.combinations(tuple(columns), k))
    return Workload(cliques, (1.0,) * len(cliques), f"all {k}-way")


def around_targets(columns: Sequence[str], targets: Sequence[str], k: int) -> Workload:
    """All k-way marginals that contain at least one of the target columns."""
    targets = _canonical(targets, columns)
    base = all_k_way(columns, k)
    cliques = tuple(cl for cl in base.cliques if set(cl) & set(targets))
    return Workload(cliques, (1.0,) * len(cliques),
                    f"{k}-way containing {', '.join(targets)}")


def explicit(columns: Sequence[str], cliques: Sequence[Sequence[str]],
             weights: Sequence[float] | None = None) -> Workload:
    """An explicit list of marginals (and optional weights)."""
    canon = tuple(_canonical(cl, columns) for cl in cliques)
    if weights is None:
        weights = (1.0,) * len(canon)
    return Workload(canon, tuple(float(w) for w in weights), "custom")


def parse_workload(spec: str, columns: Sequence[str]) -> Workload:
    """Parse a command-line workload spec.

    ``all-3way`` (also ``all-1way``, ``all-2way``); ``target:income:3`` (all
    3-way marginals containing ``income``; several targets separated by ``+``);
    or an explicit list ``age,sex;age,income*2`` (``;`` between marginals,
    ``,`` between columns, optional ``*weight``).
    """
    spec = spec.strip()
    if spec.startswith("all-") and spec.endswith("way"):
        try:
            k = int(spec[4:-3])
        except ValueError:
            raise WorkloadError(f"Cannot read the workload {spec!r}.",
                                hint="Use all-1way, all-2way or all-3way.") from None
        return all_k_way(columns, k)
    if spec.startswith("target:"):
        parts = spec.split(":")
        if len(parts) != 3:
            raise WorkloadError(f"Cannot read the workload {spec!r}.",
                                hint="Use target:COLUMN:K, e.g. target:income:3.")
        try:
            k = int(parts[2])
        except ValueError:
            raise WorkloadError(f"The k in {spec!r} is not a whole number.") from None
        return around_targets(columns, parts[1].split("+"), k)
    cliques, weights = [], []
    for item in spec.split(";"):
        item = item.strip()
        if not item:
            continue
        weight = 1.0
        if "*" in item:
            item, w = item.rsplit("*", 1)
            try:
                weight = float(w)
            except ValueError:
                raise WorkloadError(f"The weight {w!r} in the workload is not a number.") from None
        cliques.append([c.strip() for c in item.split(",") if c.strip()])
        weights.append(weight)
    return explicit(columns, cliques, weights)


def downward_closure(cliques: Iterable[Clique]) -> tuple[Clique, ...]:
    """All non-empty subsets of the given cliques, smallest first, in a stable order."""
    seen: dict[Clique, None] = {}
    for cl in cliques:
        for k in range(1, len(cl) + 1):
            for sub in itertools.combinations(cl, k):
                seen.setdefault(sub, None)
    return tuple(sorted(seen, key=len))
