"""The model-size filter: which candidate cliques keep the model under a size limit.

A round of AIM, JAM-PGM or MWEM+PGM asks, for every candidate clique ``c``,
whether the junction tree of the model's cliques plus ``c`` stays under the
round's limit: ``model_size_mb(sizes, model + [c]) <= limit``
(:func:`synth_core.model.model_size_mb`). On a wide table that is ~1,750
questions a round, each a simulation of mbi's greedy elimination over every
column. This module answers the same question exactly, with less work:

* The junction tree's size depends only on the *graph* of the cliques (an
  edge between two columns that share a clique): whether a column without
  neighbours lies in a clique changes only when it is eliminated, and it
  forms the clique of its own column either way.
* Unless the whole graph is a spanning tree (then the size is the sum of the
  edges' cells, as :func:`~synth_core.model.model_size_mb` rules), the size
  is the sum over the graph's connected components ``K`` of ``f(K)``, the
  cells of the maximal cliques of the greedy elimination run on ``K`` alone,
  times 8 bytes. Exact: eliminating a column changes only the neighbour sets
  inside its component, so the greedy order restricted to ``K`` (each pick is
  the cheapest of all remaining columns, ties to the earlier column, hence
  the cheapest and earliest of ``K``'s) is the order greedy elimination
  takes on ``K`` alone, and forms the same cliques.
* Adding ``c`` merges the components ``c`` touches into one; every other
  component keeps its ``f``. ``f`` is cached by the component's columns and
  edges (:func:`component_cells`), so a component the model did not change
  since the last round, or that another candidate formed already, costs a
  dictionary look-up. Greedy elimination runs only for a merged component
  that differs from every one seen before.
* ``f`` itself is the greedy elimination with each column's cost recomputed
  only when a neighbour goes (:func:`greedy_elimination`), not every column's
  at every step.
* ``cells(c) * 8 B > limit`` rejects without simulation: some maximal clique
  of the triangulation contains ``c``, so the tree has at least ``cells(c)`` cells.
"""

from __future__ import annotations

import functools
import math
from typing import Mapping, Sequence

from .inference import cells

Clique = tuple[str, ...]
Edge = tuple[str, str]

BYTES_PER_CELL = 8
MB = 2 ** 20


def size_filter(sizes: dict[str, int], model_cliques: Sequence[Clique],
                candidates: Sequence, limit_mb: float) -> list:
    """Candidates (objects with a ``clique``) whose addition keeps the model under
    ``limit_mb``, or that add nothing new.

    A clique inside the downward closure of the measured cliques is always
    allowed: measuring it does not grow the model. The verdict of every other
    candidate equals ``model_size_mb(sizes, model_cliques + [clique]) <= limit_mb``.
    """
    covered = [set(cl) for cl in model_cliques]
    graph = ModelGraph(sizes, model_cliques)
    out, verdicts = [], {}
    for cand in candidates:
        cl = cand.clique
        if any(set(cl) <= c for c in covered):
            out.append(cand)
            continue
        if cl not in verdicts:
            verdicts[cl] = fits(graph, cl, limit_mb)
        if verdicts[cl]:
            out.append(cand)
    return out


def fits(graph: "ModelGraph", clique: Clique, limit_mb: float) -> bool:
    """Whether the model plus ``clique`` stays within ``limit_mb`` (exact)."""
    if cells(graph.sizes, clique) * BYTES_PER_CELL / MB > limit_mb:
        return False
    return graph.size_with_mb(clique) <= limit_mb


class ModelGraph:
    """The graph of a model's cliques, split into connected components.

    ``size_with_mb(c)`` is ``model_size_mb(sizes, cliques + [c])``.
    """

    def __init__(self, sizes: Mapping[str, int], cliques: Sequence[Clique]):
        self.sizes = dict(sizes)
        self.order = {a: i for i, a in enumerate(self.sizes)}
        self.edges: set[Edge] = set()
        for cl in cliques:
            self.edges.update(clique_edges(cl, self.order))
        self.component = components(self.sizes, self.edges)
        members: dict[int, list[str]] = {}
        for a in self.sizes:
            members.setdefault(self.component[a], []).append(a)
        self.members = members
        self.component_edges: dict[int, set[Edge]] = {k: set() for k in members}
        for e in self.edges:
            self.component_edges[self.component[e[0]]].add(e)
        self.component_cells = {k: self._cells(members[k], self.component_edges[k])
                                for k in members}
        self.total_cells = sum(self.component_cells.values())

    def _cells(self, columns: Sequence[str], edges: set[Edge]) -> int:
        return component_cells(tuple((a, self.sizes[a]) for a in columns), frozenset(edges))

    def size_with_mb(self, clique: Clique) -> float:
        """Junction-tree MB of the model plus ``clique``."""
        new_edges = clique_edges(clique, self.order)
        edges = len(self.edges | new_edges)
        touched = {self.component[a] for a in clique}
        if edges and edges == len(self.sizes) - 1 and len(touched) == len(self.members):
            # the whole graph becomes a spanning tree: the edges are the cliques
            tree = self.edges | new_edges
            return sum(self.sizes[a] * self.sizes[b] for a, b in tree) * BYTES_PER_CELL / MB
        columns = sorted((a for k in touched for a in self.members[k]), key=self.order.__getitem__)
        merged = set(new_edges).union(*(self.component_edges[k] for k in touched))
        kept = self.total_cells - sum(self.component_cells[k] for k in touched)
        return (kept + self._cells(columns, merged)) * BYTES_PER_CELL / MB


def clique_edges(clique: Sequence[str], order: Mapping[str, int]) -> set[Edge]:
    """The pairs of columns of ``clique``, each in schema order."""
    cols = sorted(clique, key=order.__getitem__)
    return {(a, b) for i, a in enumerate(cols) for b in cols[i + 1:]}


def components(sizes: Mapping[str, int], edges: set[Edge]) -> dict[str, int]:
    """Column -> index of its connected component (union-find over ``edges``)."""
    root = {a: a for a in sizes}

    def find(a: str) -> str:
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            root[rb] = ra
    index: dict[str, int] = {}
    return {a: index.setdefault(find(a), len(index)) for a in sizes}


@functools.lru_cache(maxsize=1 << 16)
def component_cells(columns: tuple[tuple[str, int], ...], edges: frozenset) -> int:
    """Cells of the junction tree of one connected component: the maximal cliques of
    greedy elimination over ``columns`` (``(name, size)`` in schema order) and ``edges``.

    A lone column is one clique of its own size, whether it lies in a clique or not
    (its elimination cost only orders it among the other columns of its component,
    of which it has none).
    """
    sizes = dict(columns)
    if not edges:
        return sum(sizes.values())
    return sum(math.prod(sizes[c] for c in f) for f in greedy_elimination(sizes, edges))


def greedy_elimination(sizes: Mapping[str, int], edges) -> list[frozenset]:
    """The maximal cliques of mbi's greedy elimination of a graph whose every column
    has a neighbour (:func:`synth_core.inference.elimination_cliques`' rule: eliminate
    the column whose clique with its neighbours has the fewest cells, ties to the
    earlier column; join its neighbours).

    The cost of a column changes only when one of its neighbours is eliminated, so
    only those costs are recomputed after each step.
    """
    nbrs: dict[str, set] = {a: set() for a in sizes}
    for a, b in edges:
        nbrs[a].add(b)
        nbrs[b].add(a)
    cost = {a: sizes[a] * math.prod(sizes[b] for b in nbrs[a]) for a in sizes}
    remaining = list(sizes)
    formed = []
    while remaining:
        best = min(remaining, key=cost.__getitem__)   # the first of the cheapest
        remaining.remove(best)
        around = nbrs.pop(best)
        for b in around:
            joined = nbrs[b]
            joined.discard(best)
            joined.update(around)
            joined.discard(b)
            cost[b] = sizes[b] * math.prod(sizes[c] for c in joined)
        formed.append(frozenset(around | {best}))
    return [f for f in dict.fromkeys(formed) if not any(f < o for o in formed)]
