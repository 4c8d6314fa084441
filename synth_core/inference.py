"""Exact marginals of a fitted model, in plain numpy.

Private-PGM calibrates the model's junction tree (``mbi`` computes the beliefs
of its maximal cliques inside the compiled fit). Any marginal ``M_r(p)`` then
follows without compiling anything: for a connected subtree ``T`` of a
calibrated junction tree whose cliques cover ``r``,

    p(vars(T)) = prod_{C in T} beta_C / prod_{(C, D) in edges(T)} mu_{C ∩ D},

and ``M_r(p)`` is that product summed over every variable outside ``r``
(an ``einsum`` over a few small arrays). The authors' code instead compiles one
JAX program per candidate per round (DESIGN.md section 5); this module keeps
scoring free of compilation, so a long-lived process does not accumulate
compiled programs.
"""

from __future__ import annotations

from collections import deque
from typing import Mapping, Sequence

import numpy as np

Clique = tuple[str, ...]


class ModelMarginals:
    """Answers marginal queries from calibrated junction-tree beliefs.

    Args:
        sizes: number of codes of every column, in schema order.
        beliefs: marginal counts of each junction-tree clique (arrays shaped
            by the clique's column sizes, in the clique's order).
        edges: junction-tree edges (pairs of cliques).
        total: the model's total (number of records it represents).
    """

    def __init__(self, sizes: Mapping[str, int], beliefs: Mapping[Clique, np.ndarray],
                 edges: Sequence[tuple[Clique, Clique]], total: float):
        self.sizes = dict(sizes)
        self.total = float(total)
        self.order = {c: i for i, c in enumerate(self.sizes)}
        # probabilities (sum to one) for stable products
        self.beliefs = {tuple(cl): np.asarray(b, dtype=np.float64) / max(float(np.sum(b)), 1e-300)
                        for cl, b in beliefs.items()}
        covered = set().union(*map(set, self.beliefs)) if self.beliefs else set()
        for c in self.sizes:  # columns no clique mentions are independent and uniform
            if c not in covered:
                self.beliefs[(c,)] = np.full(self.sizes[c], 1.0 / self.sizes[c])
        self.adjacent: dict[Clique, list[Clique]] = {cl: [] for cl in self.beliefs}
        for a, b in edges:
            a, b = tuple(a), tuple(b)
            self.adjacent[a].append(b)
            self.adjacent[b].append(a)
        self.holders: dict[str, list[Clique]] = {c: [] for c in self.sizes}
        for cl in self.beliefs:
            for c in cl:
                self.holders[c].append(cl)
        self._component = self._components()
        self._inv_sep: dict[tuple[Clique, Clique], tuple[Clique, np.ndarray]] = {}

    @staticmethod
    def uniform(sizes: Mapping[str, int], total: float) -> "ModelMarginals":
        """The model before any measurement: uniform over the domain."""
        return ModelMarginals(sizes, {}, [], total)

    # -- structure -----------------------------------------------------------

    def _components(self) -> dict[Clique, int]:
        comp: dict[Clique, int] = {}
        label = 0
        for start in self.beliefs:
            if start in comp:
                continue
            queue = deque([start])
            comp[start] = label
            while queue:
                node = queue.popleft()
                for nb in self.adjacent[node]:
                    if nb not in comp:
                        comp[nb] = label
                        queue.append(nb)
            label += 1
        return comp

    def _subtree(self, attrs: Sequence[str]) -> tuple[list[Clique], dict[Clique, Clique]]:
        """A connected subtree covering ``attrs`` (all in one component), with parents."""
        # root: the clique holding most of the attributes
        root = max((cl for c in attrs for cl in self.holders[c]),
                   key=lambda cl: len(set(cl) & set(attrs)))
        parent: dict[Clique, Clique | None] = {root: None}
        dist = {root: 0}
        queue = deque([root])
        while queue:
            node = queue.popleft()
            for nb in self.adjacent[node]:
                if nb not in dist:
                    dist[nb] = dist[node] + 1
                    parent[nb] = node
                    queue.append(nb)
        nodes = {root}
        for c in attrs:
            if any(c in cl for cl in nodes):
                continue
            node = min(self.holders[c], key=lambda cl: dist.get(cl, np.inf))
            while node not in nodes:
                nodes.add(node)
                node = parent[node]
        ordered = sorted(nodes, key=dist.__getitem__)
        return ordered, {n: parent[n] for n in ordered if parent[n] is not None}

    def _separator(self, child: Clique, par: Clique) -> tuple[Clique, np.ndarray]:
        key = (child, par)
        if key not in self._inv_sep:
            sep = tuple(c for c in child if c in par)
            mu = _sum_to(self.beliefs[child], child, sep)
            inv = np.divide(1.0, mu, out=np.zeros_like(mu), where=mu > 0)
            self._inv_sep[key] = (sep, inv)
        return self._inv_sep[key]

    # -- queries -------------------------------------------------------------

    def probability(self, clique: Sequence[str]) -> np.ndarray:
        """``p(clique)`` as an array shaped by the clique's sizes (sums to one)."""
        clique = tuple(clique)
        groups: dict[int, list[str]] = {}
        for c in clique:
            comp = self._component[self.holders[c][0]]
            groups.setdefault(comp, []).append(c)
        result, axes = None, []
        for attrs in groups.values():
            part = self._component_probability(attrs)
            result = part if result is None else np.multiply.outer(result, part)
            axes.extend(attrs)
        perm = [axes.index(c) for c in clique]
        return np.transpose(result, perm)

    def _component_probability(self, attrs: Sequence[str]) -> np.ndarray:
        for cl in self.holders[attrs[0]]:
            if set(attrs) <= set(cl):
                return _sum_to(self.beliefs[cl], cl, tuple(attrs))
        nodes, parents = self._subtree(attrs)
        children: dict[Clique, list[Clique]] = {n: [] for n in nodes}
        for child, par in parents.items():
            children[par].append(child)
        wanted = set(attrs)
        messages: dict[Clique, tuple[np.ndarray, tuple[str, ...]]] = {}
        # leaves first: each node sends p(its part of the query | separator to its parent),
        # summing out every variable no later step needs, so messages stay small
        for node in reversed(nodes):
            table, labels = self.beliefs[node], tuple(node)
            up: tuple[str, ...] = ()
            if node in parents:
                up, inv = self._separator(node, parents[node])
                table = _contract(table, labels, inv, up, labels)
            pending = list(children[node])
            while pending:
                msg, mlabels = messages.pop(pending.pop())
                later = set(up).union(*(set(c) & set(node) for c in pending))
                keep = tuple(dict.fromkeys(c for c in labels + mlabels if c in wanted or c in later))
                table, labels = _contract(table, labels, msg, mlabels, keep), keep
            keep = tuple(c for c in labels if c in wanted or c in up)
            messages[node] = (_sum_to(table, labels, keep), keep)
        table, labels = messages[nodes[0]]
        return _sum_to(table, labels, tuple(attrs))

    def counts(self, clique: Sequence[str]) -> np.ndarray:
        """``M_r(p)``: the model's marginal counts, flattened like a data marginal."""
        return (self.probability(clique) * self.total).reshape(-1)

    def many(self, cliques: Sequence[Sequence[str]]) -> dict[Clique, np.ndarray]:
        return {tuple(cl): self.counts(cl) for cl in cliques}


def _contract(a: np.ndarray, la: Sequence[str], b: np.ndarray, lb: Sequence[str],
              out: Sequence[str]) -> np.ndarray:
    """``sum over the rest of a[la] * b[lb]``, laid out as ``out`` (one pairwise einsum)."""
    index: dict[str, int] = {}
    ia = [index.setdefault(c, len(index)) for c in la]
    ib = [index.setdefault(c, len(index)) for c in lb]
    return np.einsum(a, ia, b, ib, [index[c] for c in out], optimize=True)


def _sum_to(array: np.ndarray, axes: Clique, keep: Clique) -> np.ndarray:
    """Sum ``array`` (axes named ``axes``) down to ``keep``, in ``keep``'s order."""
    drop = tuple(i for i, c in enumerate(axes) if c not in keep)
    out = array.sum(axis=drop) if drop else array
    remaining = [c for c in axes if c in keep]
    perm = [remaining.index(c) for c in keep]
    return np.transpose(out, perm)
