"""Exact marginals of a fitted model, in plain numpy.

Private-PGM calibrates the model's junction tree (``mbi`` computes the beliefs
of its maximal cliques inside the compiled fit). Any marginal ``M_r(p)`` then
follows without compiling anything: for a connected subtree ``T`` of a
calibrated junction tree whose cliques cover ``r``,

    p(vars(T)) = prod_{C in T} beta_C / prod_{(C, D) in edges(T)} mu_{C ∩ D},

and ``M_r(p)`` is that product summed over every variable outside ``r``
(an ``einsum`` over a few small arrays). Queries of up to three columns are
answered at one "centre" clique from per-column messages ``p(x | separator)``
that every query of the model shares (:meth:`ModelMarginals._center_plan`).
The authors' code instead compiles one
JAX program per candidate per round; this module keeps
scoring free of compilation, so a long-lived process does not accumulate
compiled programs.
"""

from __future__ import annotations

import math

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Mapping, NamedTuple, Sequence

import numpy as np

Clique = tuple[str, ...]

#: Largest intermediate table (cells) numpy's contraction-path search may
#: create (2^27 cells = 1 GiB). When no pairwise step fits under the bound,
#: numpy contracts everything left in one naive loop over the joint index
#: space: with its default bound (the largest input), and still with 2^24,
#: some Adult queries took minutes that way (all 575 candidates of one
#: 26-round JAM-PGM model: over 10 minutes with 2^24, 8 s with 2^26 or more).
EINSUM_MAX_INTERMEDIATE = 2 ** 27
#: Threads that answer a round's candidate queries (the machines here have 2 cores).
SCORING_THREADS = 2
#: Contractions whose joint index space is at most this many cells run as one
#: plain ``np.einsum`` call (no path search, whose overhead dominates there).
SMALL_CONTRACTION = 2 ** 16
#: The factored oracle's cost model, CPU seconds per call (fitted to calls on
#: the junction trees of Adult runs of AIM, JAM-PGM and vJAM-PGM, one BLAS
#: thread; most calls within 1.3x of it, a few up to 3.6 times dearer):
#: per FLOP of the planned contractions (numpy's count), per cell of a node
#: table built or read, per contraction (numpy's per-call overhead).
FACTORED_SECONDS_PER_FLOP = 0.19e-9
FACTORED_SECONDS_PER_TABLE_CELL = 1.8e-9
FACTORED_SECONDS_PER_CONTRACTION = 41e-6
#: Cells (float64) of junction-tree messages one model keeps for reuse across
#: queries (2^25 cells = 256 MiB); a message past the budget is recomputed.
MESSAGE_CACHE_CELLS = 2 ** 25
#: :class:`TreeOracle` rescales a node's table to max 1 once its max falls below this.
#: Its factors all have max 1, so products only shrink; a table left small would push
#: its tiniest cells into float64's subnormal range, whose arithmetic is slow, so the
#: bound is close to 1: a cell turns subnormal here only if it is below about 1e-300
#: of its table's max (instead of 2e-308 with a rescale after every product).
RESCALE_BELOW = 1e-8


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
        self._reduced: dict[tuple[Clique, frozenset], tuple[np.ndarray, Clique]] = {}
        self._cond: dict[tuple, tuple[np.ndarray, Clique]] = {}
        self._messages: dict[tuple, tuple[np.ndarray, Clique]] = {}
        self._message_cells = 0
        self._behind: dict[tuple[Clique, Clique], frozenset] = {}
        self._towards: dict[tuple[Clique, str], Clique] = {}
        self._column_messages: dict[tuple[str, Clique, Clique], tuple[np.ndarray, Clique]] = {}

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
        return self._best_rooting(nodes, set(attrs))

    def _rooted(self, nodes: set, root: Clique) -> tuple[list[Clique], dict[Clique, Clique]]:
        """``nodes`` (a connected subtree) in breadth-first order from ``root``, with parents."""
        order, parents = [root], {}
        for node in order:
            for nb in self.adjacent[node]:
                if nb in nodes and nb != parents.get(node):
                    parents[nb] = node
                    order.append(nb)
        return order, parents

    def _best_rooting(self, nodes: set, wanted: set) -> tuple[list[Clique], dict[Clique, Clique]]:
        """Root the covering subtree where the messages it sends are smallest.

        A message carries the query columns below it plus its separator, so a
        root far from the query's columns makes every message on the way carry
        them; summing the message sizes for each possible root and taking the
        smallest avoids that (an Adult query: 1.4 s rooted at a leaf).
        """
        best, best_cost = None, None
        for root in sorted(nodes):
            order, parents = self._rooted(nodes, root)
            carried: dict[Clique, set] = {}
            cost = 0
            for node in reversed(order):
                below = set(c for c in node if c in wanted)
                for child in order:
                    if parents.get(child) == node:
                        below |= carried[child]
                carried[node] = below
                if node in parents:
                    labels = below | (set(node) & set(parents[node]))
                    cost += int(np.prod([self.sizes[c] for c in labels], dtype=np.int64))
            if best_cost is None or cost < best_cost:
                best, best_cost = (order, parents), cost
        return best

    def _reduce(self, node: Clique, keep: frozenset) -> tuple[np.ndarray, Clique]:
        """A clique's belief summed down to the columns in ``keep`` (cached).

        Scoring asks hundreds of queries of one model; they touch each large
        belief through the same few column sets (separators plus query
        columns), so each full pass over a belief happens once per set.
        """
        key = (node, keep)
        if key not in self._reduced:
            labels = tuple(c for c in node if c in keep)
            self._reduced[key] = (_sum_to(self.beliefs[node], node, labels), labels)
        return self._reduced[key]

    def _conditional(self, node: Clique, parent: Clique | None,
                     keep: frozenset) -> tuple[np.ndarray, Clique]:
        """``p(keep | separator to parent)`` from the node's belief (cached)."""
        key = (node, parent, keep)
        if key not in self._cond:
            table, labels = self._reduce(node, keep)
            if parent is not None:
                up, inv = self._separator(node, parent)
                table = _contract(table, labels, inv, up, labels)
            self._cond[key] = (table, labels)
        return self._cond[key]

    def _separator(self, child: Clique, par: Clique) -> tuple[Clique, np.ndarray]:
        key = (child, par)
        if key not in self._inv_sep:
            sep = tuple(c for c in child if c in par)
            mu = self._reduce(child, frozenset(sep))[0]
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
        inside = [cl for cl in self.holders[attrs[0]] if set(attrs) <= set(cl)]
        if inside:
            smallest = min(inside, key=lambda cl: self.beliefs[cl].size)
            table, labels = self._reduce(smallest, frozenset(attrs))
            return _sum_to(table, labels, tuple(attrs))
        plan = self._center_plan(attrs)
        if plan is not None:
            centre, far, labels = plan
            table, lab = self._reduce(centre, labels)
            operands = [(table, lab)] + [self._column_message(c, a, centre) for c, a in far.items()]
            return _einsum(operands, tuple(attrs))
        nodes, parents = self._subtree(attrs)
        children: dict[Clique, list[Clique]] = {n: [] for n in nodes}
        for child, par in parents.items():
            children[par].append(child)
        below: dict[Clique, frozenset] = {}
        for node in reversed(nodes):   # leaves first: the nodes of each node's subtree
            below[node] = frozenset([node]).union(*(below[c] for c in children[node]))
        table, labels = self._send(nodes[0], parents, children, set(attrs), below)
        return _sum_to(table, labels, tuple(attrs))

    def _columns_behind(self, node: Clique, towards: Clique) -> frozenset:
        """The columns of every clique on ``node``'s side of the edge ``(node, towards)`` (cached)."""
        key = (node, towards)
        if key not in self._behind:
            self._behind[key] = frozenset(node).union(
                *(self._columns_behind(nb, node) for nb in self.adjacent[node] if nb != towards))
        return self._behind[key]

    def _center_plan(self, attrs: Sequence[str]) -> tuple[Clique, dict, frozenset] | None:
        """The cheapest centre clique ``M`` for a query, or ``None`` when none is valid.

        ``M`` holds the query's local columns ``L``; every other query column
        ``x`` lies behind one edge ``(A_x, M)``, and ``M`` is valid when these
        edges differ. The branches behind distinct edges are independent given
        their separators, so

            p(r) = sum over the rest of  p(L ∪ S_1 ∪ ... ∪ S_k) * prod_x p(x | S_x),

        with ``S_x`` the separator of ``(A_x, M)``; its cost is
        :meth:`_centre_cost`. Every query of at
        most three columns has a valid centre (the node where the paths between
        their cliques meet). Returns ``(M, {x: A_x}, L ∪ separators)``.
        """
        comp = self._component[self.holders[attrs[0]][0]]
        best, best_cost = None, None
        for centre in self.beliefs:
            if self._component[centre] != comp:
                continue
            far = {c: self._direction(centre, c) for c in attrs if c not in centre}
            if len(set(far.values())) < len(far):
                continue
            seps = {c: frozenset(a) & frozenset(centre) for c, a in far.items()}
            labels = frozenset(c for c in attrs if c in centre).union(*seps.values())
            cost = self._centre_cost(attrs, labels, seps)
            if best_cost is None or cost < best_cost:
                best, best_cost = (centre, far, labels), cost
        return best

    def _centre_cost(self, attrs: Sequence[str], labels: frozenset, seps: dict) -> int:
        """Multiply-adds of a centre's answer: ``p(labels)`` times each far column's message in
        turn, smallest column first, each step's table ``live ∪ {x}`` (``cells(live ∪ {x})``
        products) keeping only what the query and the later separators still need."""
        order = sorted(seps, key=self.sizes.__getitem__)
        live, cost = set(labels), 0
        for i, c in enumerate(order):
            live.add(c)
            cost += cells(self.sizes, live)
            need = set(attrs).union(*(seps[d] for d in order[i + 1:]))
            live &= need
        return cost

    def _direction(self, node: Clique, column: str) -> Clique:
        """The neighbour of ``node`` behind which ``column`` (not in ``node``) lies (cached)."""
        key = (node, column)
        hit = self._towards.get(key)
        if hit is None:
            hit = next(nb for nb in self.adjacent[node] if column in self._columns_behind(nb, node))
            self._towards[key] = hit
        return hit

    def _column_message(self, column: str, node: Clique, towards: Clique
                        ) -> tuple[np.ndarray, Clique]:
        """``p(column | S)`` with ``S`` the separator of ``(node, towards)``, ``column`` behind it.

        At the column's clique, its belief summed to ``column ∪ S`` divided by
        ``p(S)``; further away, with ``B`` the neighbour of ``node`` that the
        column lies behind, ``sum p(S_B ∪ S | S) p(column | S_B)`` (the column
        and ``node`` are independent given ``S_B``). One message per column
        and directed edge serves every query of the model; kept within
        :data:`MESSAGE_CACHE_CELLS` with the subtree messages.
        """
        key = (column, node, towards)
        hit = self._column_messages.get(key)
        if hit is not None:
            return hit
        sep = tuple(c for c in node if c in towards)
        if column in node:
            message = self._conditional(node, towards, frozenset((column,) + sep))
        else:
            behind = self._direction(node, column)
            inner = tuple(c for c in node if c in behind)
            cond = self._conditional(node, towards, frozenset(inner + sep))
            keep = (column,) + sep
            message = (_einsum([cond, self._column_message(column, behind, node)], keep), keep)
        if self._message_cells + message[0].size <= MESSAGE_CACHE_CELLS:
            self._column_messages[key] = message
            self._message_cells += message[0].size
        return message

    def _send(self, node: Clique, parents: dict, children: dict, wanted: set,
              below: dict) -> tuple[np.ndarray, tuple[str, ...]]:
        """What ``node`` sends its parent: ``p(wanted columns in its subtree | separator)``
        (at the root: ``p(wanted)``), summing out every column no later step needs.

        The message depends only on the node, its parent, the nodes of its
        subtree and the wanted columns in them, so the candidates of a round
        share it (a column's message from its branch is computed once, not
        once per candidate holding the column): kept per model up to
        :data:`MESSAGE_CACHE_CELLS` cells in all.
        """
        parent = parents.get(node)
        key = (node, parent, below[node], frozenset(c for n in below[node] for c in n if c in wanted))
        hit = self._messages.get(key)
        if hit is not None:
            return hit
        up = tuple(c for c in node if c in parent) if parent is not None else ()
        from_children = set().union(*(set(c) & set(node) for c in children[node]))
        table, labels = self._conditional(
            node, parent, frozenset(c for c in node if c in wanted or c in up or c in from_children))
        operands = [(table, labels)] + [self._send(c, parents, children, wanted, below)
                                        for c in children[node]]
        present = dict.fromkeys(c for _, lab in operands for c in lab)
        keep = tuple(c for c in present if c in wanted or c in up)
        message = (_einsum(operands, keep), keep)
        if parent is not None and self._message_cells + message[0].size <= MESSAGE_CACHE_CELLS:
            self._messages[key] = message
            self._message_cells += message[0].size
        return message

    def counts(self, clique: Sequence[str]) -> np.ndarray:
        """``M_r(p)``: the model's marginal counts, flattened like a data marginal."""
        return (self.probability(clique) * self.total).reshape(-1)

    def many(self, cliques: Sequence[Sequence[str]], workers: int | None = None
             ) -> dict[Clique, np.ndarray]:
        """``M_r(p)`` for many cliques, on ``workers`` threads (default: up to 2 cores).

        numpy releases the interpreter lock in its contractions and sums, so
        the queries of one round run side by side; the caches they share only
        ever gain entries (a race computes an entry twice, never wrongly).
        """
        unique = list(dict.fromkeys(tuple(cl) for cl in cliques))
        if workers is None:
            workers = min(SCORING_THREADS, os.cpu_count() or 1)
        if workers <= 1 or len(unique) < 2 * workers:
            return {cl: self.counts(cl) for cl in unique}
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return dict(zip(unique, pool.map(self.counts, unique)))


def _contract(a: np.ndarray, la: Sequence[str], b: np.ndarray, lb: Sequence[str],
              out: Sequence[str]) -> np.ndarray:
    """``sum over the rest of a[la] * b[lb]``, laid out as ``out`` (one pairwise einsum)."""
    return _contract_step([(a, list(la)), (b, list(lb))], list(out))


def _einsum(operands: Sequence[tuple[np.ndarray, Sequence[str]]], out: Sequence[str]) -> np.ndarray:
    """Sum-product of labelled arrays down to ``out``, in an order numpy's path search picks.

    At a junction-tree node several messages meet; contracting them in the
    cheapest order (rather than one after another) keeps intermediate tables
    small when each message carries a different query column.
    """
    index: dict[str, int] = {}
    args: list = []
    for array, labels in operands:
        args.extend([array, [index.setdefault(c, len(index)) for c in labels]])
    args.append([index[c] for c in out])
    sizes = {c: a.shape[i] for a, labels in operands for i, c in enumerate(labels)}
    if len(operands) == 1 or np.prod(list(sizes.values()), dtype=np.float64) <= SMALL_CONTRACTION:
        return np.einsum(*args)  # small: planning a path costs more than it saves
    if len(operands) == 2:
        return _contract_step([(a, list(lab)) for a, lab in operands], list(out))
    path = np.einsum_path(*args, optimize=("greedy", EINSUM_MAX_INTERMEDIATE))[0][1:]
    return _pairwise(list(args[0:-1:2]), list(args[1:-1:2]), args[-1], path)


def _pairwise(arrays: list, labels: list, out: list, path: Sequence[tuple[int, ...]]) -> np.ndarray:
    """Execute a contraction path one step at a time, each step a plain ``np.einsum``.

    Each step contracts the operands the path names into one, summing every
    label no other operand and not ``out`` needs; the sum is the same, only
    the order of the additions differs. (numpy's own execution of a planned
    path, ``np.einsum(..., optimize=...)``, reshapes and copies its operands
    into batched matrix products: 30 times slower than the plain einsum of
    the same pair on the Adult models' 480,000-cell cliques.)
    """
    for step in path:
        picked = sorted(step, reverse=True)
        ops = [(arrays.pop(i), labels.pop(i)) for i in picked]
        rest = set(out).union(*map(set, labels))
        seen = dict.fromkeys(c for _, lab in ops for c in lab)
        keep = [c for c in seen if c in rest]
        arrays.append(_contract_step(ops, keep))
        labels.append(keep)
    (array,), (lab,) = arrays, labels
    return np.einsum(array, lab, list(out))


def _contract_step(ops: list, keep: list) -> np.ndarray:
    """``sum over the rest of prod ops``, laid out as ``keep``: one step of a contraction path.

    Labels that one operand alone holds and ``keep`` lacks are summed out of it
    first. Two operands are then multiplied as a batched matrix product
    (:func:`_batched_product`); more (a path step numpy's search could not
    split) run as one plain ``np.einsum`` on contiguous copies.
    """
    ops = [_sum_unshared(i, ops, keep) for i in range(len(ops))]
    if len(ops) == 2:
        (a, la), (b, lb) = ops
        return _batched_product(a, la, b, lb, keep)
    index: dict = {}
    args = [x for a, lab in ops
            for x in (np.ascontiguousarray(a), [index.setdefault(c, len(index)) for c in lab])]
    return np.einsum(*args, [index[c] for c in keep])


def _batched_product(a: np.ndarray, la: Sequence[str], b: np.ndarray, lb: Sequence[str],
                     keep: Sequence[str]) -> np.ndarray:
    """``out[keep] = sum_k a[la] * b[lb]`` with every label in ``la`` or ``lb`` (none summed alone).

    The labels split into batch ``g`` (both operands, kept), left ``l`` (``a``
    only), right ``r`` (``b`` only) and contracted ``k`` (both, not kept), so
    ``out[g, l, r] = sum_k A[g, l, k] B[g, r, k]``: both operands are laid out
    with ``k`` last and contiguous and reshaped to three axes, and the sum runs
    as ``einsum('glk,grk->glr')`` (its inner loop a contiguous dot product of
    length ``|k|``), or as a broadcast product when nothing is contracted. The
    same sums as one einsum over all labels, in the same order per cell (each
    output cell is one dot product over ``k``); no BLAS call. A strided
    many-axis einsum with short inner axes ran 20 to 30 times slower.
    """
    la, lb, keep = list(la), list(lb), list(keep)
    in_b = set(lb)
    batch = [c for c in keep if c in la and c in in_b]
    left = [c for c in la if c not in in_b]
    right = [c for c in lb if c not in set(la)]
    summed = [c for c in la if c in in_b and c not in keep]
    size = dict(zip(la, a.shape)) | dict(zip(lb, b.shape))
    g, l, r, k = (math.prod(size[c] for c in part) for part in (batch, left, right, summed))
    A = np.transpose(a, [la.index(c) for c in batch + left + summed]).reshape(g, l, k)
    B = np.transpose(b, [lb.index(c) for c in batch + right + summed]).reshape(g, r, k)
    if k == 1:
        out = A * B.reshape(g, 1, r)
    else:
        out = np.einsum("glk,grk->glr", np.ascontiguousarray(A), np.ascontiguousarray(B))
    labels = batch + left + right
    out = out.reshape([size[c] for c in labels])
    return np.transpose(out, [labels.index(c) for c in keep])


def _sum_unshared(i: int, ops: list, keep: list) -> tuple[np.ndarray, list]:
    """Operand ``i`` with every label summed out that neither ``keep`` nor another operand holds."""
    array, labels = ops[i]
    others = set(keep).union(*(set(lab) for j, (_, lab) in enumerate(ops) if j != i))
    drop = tuple(k for k, c in enumerate(labels) if c not in others)
    if not drop:
        return array, list(labels)
    return array.sum(axis=drop), [c for c in labels if c in others]


def _optimized_flops(path_info: str) -> float:
    """The "Optimized FLOP count" of an ``np.einsum_path`` report."""
    for line in path_info.splitlines():
        if "Optimized FLOP count" in line:
            return float(line.split(":")[1])
    raise ValueError("np.einsum_path reported no FLOP count")


def _sum_to_axes(array: np.ndarray, keep: Sequence[int]) -> np.ndarray:
    """``array`` summed over every axis not in ``keep``, the kept axes in ``keep``'s order, as
    one ``np.einsum`` (two to three times faster than ``ndarray.sum`` on 5- to 7-axis tables)."""
    return np.einsum(array, list(range(array.ndim)), list(keep))


def _sum_axes_to(array: np.ndarray, axes: Clique, keep: Clique) -> np.ndarray:
    """``array`` (axes named ``axes``) summed down to ``keep``, in ``keep``'s order."""
    return _sum_to_axes(array, [axes.index(c) for c in keep])


def _sum_to(array: np.ndarray, axes: Clique, keep: Clique) -> np.ndarray:
    """Sum ``array`` (axes named ``axes``) down to ``keep``, in ``keep``'s order."""
    drop = tuple(i for i, c in enumerate(axes) if c not in keep)
    out = array.sum(axis=drop) if drop else array
    remaining = [c for c in axes if c in keep]
    perm = [remaining.index(c) for c in keep]
    return np.transpose(out, perm)


def _broadcast_to(array: np.ndarray, labels: Sequence[str], target: Sequence[str]) -> np.ndarray:
    """``array`` (axes ``labels``, a subset of ``target``) laid out to broadcast over ``target``."""
    order = [c for c in target if c in labels]
    out = np.transpose(array, [list(labels).index(c) for c in order])
    return out.reshape([array.shape[list(labels).index(c)] if c in labels else 1 for c in target])


def _logsumexp_to(array: np.ndarray, labels: Sequence[str], keep: Sequence[str]) -> np.ndarray:
    """Log-sum-exp of ``array`` over every axis not in ``keep`` (kept axes in ``labels`` order)."""
    drop = tuple(i for i, c in enumerate(labels) if c not in keep)
    if not drop:
        return array
    top = np.max(array, axis=drop, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    out = np.log(np.sum(np.exp(array - top), axis=drop)) + np.squeeze(top, axis=drop)
    return out


def rooted_parts(adjacent: Mapping[Clique, Sequence[Clique]]
                 ) -> list[tuple[list[Clique], dict[Clique, Clique | None]]]:
    """Each connected part of a forest, breadth-first from its first node, with every node's parent."""
    seen: set = set()
    parts = []
    for start in adjacent:
        if start in seen:
            continue
        order, parent = [start], {start: None}
        seen.add(start)
        for node in order:
            for nb in adjacent[node]:
                if nb not in seen:
                    seen.add(nb)
                    parent[nb] = node
                    order.append(nb)
        parts.append((order, parent))
    return parts


def calibrate(sizes: Mapping[str, int], log_potentials: Mapping[Clique, np.ndarray],
              tree_cliques: Sequence[Clique], edges: Sequence[tuple[Clique, Clique]]
              ) -> dict[Clique, np.ndarray]:
    """Beliefs (probabilities) of every junction-tree clique from log-potentials.

    Two-pass belief propagation (Hugin, in log space) over the junction tree
    ``mbi`` built for the fit: each potential is added to the smallest tree
    clique containing it, messages go leaves-to-root then root-to-leaves, and
    each clique's belief is its log-potential plus all incoming messages,
    normalised. The fit itself only needs the measured cliques' marginals;
    this runs once per fit, outside the compiled program, so the program
    holds a single marginal oracle (it compiles about three times faster).
    """
    tree = [tuple(c) for c in tree_cliques]
    log = {C: np.zeros([sizes[c] for c in C]) for C in tree}
    for r, theta in log_potentials.items():
        r = tuple(r)
        home = min((C for C in tree if set(r) <= set(C)),
                   key=lambda C: int(np.prod([sizes[c] for c in C], dtype=np.int64)))
        log[home] = log[home] + _broadcast_to(np.asarray(theta, dtype=np.float64), r, home)
    adjacent: dict[Clique, list[Clique]] = {C: [] for C in tree}
    for a, b in edges:
        adjacent[tuple(a)].append(tuple(b))
        adjacent[tuple(b)].append(tuple(a))
    beliefs: dict[Clique, np.ndarray] = {}
    for order, parent in rooted_parts(adjacent):
        belief = {C: log[C].copy() for C in order}
        up: dict[Clique, np.ndarray] = {}
        for node in reversed(order[1:]):   # collect towards the root
            par = parent[node]
            sep = tuple(c for c in node if c in par)
            up[node] = _logsumexp_to(belief[node], node, sep)
            belief[par] = belief[par] + _broadcast_to(up[node], sep, par)
        for node in order[1:]:             # distribute from the root
            par = parent[node]
            sep = tuple(c for c in par if c in node)
            down = _logsumexp_to(belief[par], par, sep)
            sep_node = tuple(c for c in node if c in par)
            down = np.transpose(down, [sep.index(c) for c in sep_node]) - up[node]
            belief[node] = belief[node] + _broadcast_to(down, sep_node, node)
        for C in order:
            b = belief[C]
            b = np.exp(b - b.max())
            beliefs[C] = b / b.sum()
    return beliefs


# -- a junction tree and a marginal oracle in numpy (the small-model fit path) --

def maximal_cliques(cliques: Sequence[Clique]) -> list[Clique]:
    """The cliques no other clique contains, longest first, then in given order.

    The same list, in the same order, as ``mbi.clique_utils.maximal_subset``
    (a test compares them): the fit's potentials live on these cliques.
    """
    result: list[Clique] = []
    kept: list[frozenset] = []
    seen: set = set()
    for cl in sorted((tuple(c) for c in cliques), key=len, reverse=True):
        s = frozenset(cl)
        if s in seen:
            continue
        seen.add(s)
        if not any(s <= m for m in kept):
            result.append(cl)
            kept.append(s)
    return result


def cells(sizes: Mapping[str, int], clique: Sequence[str]) -> int:
    """Number of cells of a clique's table: the product of its column sizes
    (exact Python integers: the size filter asks this about a million times a run
    on a wide table, where a numpy call per product costs more than the product)."""
    return math.prod(sizes[c] for c in clique)


def smallest_holder(sizes: Mapping[str, int], clique: Sequence[str],
                    candidates: Sequence[Clique]) -> Clique | None:
    """The first of the smallest (by cells) candidates containing ``clique``, or None."""
    scope = set(clique)
    holders = [c for c in candidates if scope <= set(c)]
    return min(holders, key=lambda c: cells(sizes, c)) if holders else None


def elimination_cliques(sizes: Mapping[str, int], cliques: Sequence[Clique]) -> list[frozenset]:
    """Maximal cliques of the triangulation by ``mbi``'s greedy elimination order.

    The cost of eliminating a column is the number of cells of the union of
    it and its neighbours (1 for a column in no clique); ties go to the
    earlier column in ``sizes``' order. Each elimination forms the clique of
    the column and its remaining neighbours; the maximal ones are returned.
    """
    nbrs: dict[str, set] = {a: set() for a in sizes}
    for cl in cliques:
        for a in cl:
            nbrs[a].update(c for c in cl if c != a)
    in_clique = {a for cl in cliques for a in cl}
    remaining = list(sizes)
    formed: list[frozenset] = []
    while remaining:
        best, best_cost = None, None
        for a in remaining:
            cost = cells(sizes, [a, *nbrs[a]]) if (a in in_clique or nbrs[a]) else 1
            if best_cost is None or cost < best_cost:
                best, best_cost = a, cost
        around = nbrs.pop(best)
        for b in around:
            nbrs[b].discard(best)
            nbrs[b].update(c for c in around if c != b)
        remaining.remove(best)
        formed.append(frozenset(around | {best}))
    return [c for c in dict.fromkeys(formed) if not any(c < o for o in formed)]


def junction_tree(sizes: Mapping[str, int], cliques: Sequence[Clique]
                  ) -> tuple[list[Clique], list[tuple[Clique, Clique]]]:
    """A junction tree (forest) whose nodes cover every clique, without ``mbi``.

    Nodes: the maximal cliques of the greedy triangulation
    (:func:`elimination_cliques`), each in schema order; edges: a maximum
    spanning forest of the graph linking nodes that share columns, weighted
    by the number shared (Kruskal). For the cliques of a triangulated graph
    such a forest has the running-intersection property, so belief
    propagation on it gives exact marginals (the tree ``mbi`` builds may
    differ where weights tie; the marginals do not).
    """
    order = {c: i for i, c in enumerate(sizes)}
    nodes = sorted(tuple(sorted(c, key=order.__getitem__))
                   for c in (_spanning_tree_edges(sizes, cliques)
                             or elimination_cliques(sizes, cliques)))
    pairs = sorted(((len(set(a) & set(b)), i, j) for i, a in enumerate(nodes)
                    for j, b in enumerate(nodes) if i < j and set(a) & set(b)),
                   key=lambda t: -t[0])
    root = list(range(len(nodes)))

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    edges = []
    for _, i, j in pairs:
        ri, rj = find(i), find(j)
        if ri != rj:
            root[ri] = rj
            edges.append((nodes[i], nodes[j]))
    return nodes, edges


def _spanning_tree_edges(sizes: Mapping[str, int], cliques: Sequence[Clique]) -> list[frozenset]:
    """The edges of the cliques' graph if it is a tree over every column (else ``[]``).

    Such a graph is already triangulated: its edges are the junction tree's
    nodes (``mbi`` eliminates it in depth-first post-order).
    """
    edges = {frozenset((a, b)) for cl in cliques for a in cl for b in cl if a != b}
    if len(edges) != len(sizes) - 1 or not edges:
        return []
    root = {c: c for c in sizes}

    def find(c):
        while root[c] != c:
            c = root[c]
        return c

    for a, b in map(tuple, edges):
        ra, rb = find(a), find(b)
        if ra == rb:
            return []
        root[ra] = rb
    return sorted(edges, key=sorted)


def _sum_axes(array: np.ndarray, drop: Sequence[int]) -> np.ndarray:
    """``array.sum(axis=drop)`` (see :func:`_sum_to_axes`)."""
    return _sum_to_axes(array, [i for i in range(array.ndim) if i not in drop])


class TreeOracle:
    """Marginals of a model with log-potentials on ``cliques``, by Hugin propagation in numpy.

    ``p(x) ∝ exp(sum_r theta_r(x_r))``; every potential is added to its
    smallest junction-tree node; each connected part is calibrated by two
    passes of sum-product messages in probability space (each node's table
    is ``exp(log-table - its max)``, each message scaled to max 1, which
    changes no normalised belief). Calling it returns ``total * p(r)`` for
    every potential clique ``r``, in ``r``'s column order: what ``mbi``'s
    oracles return. Everything structural (homes, axes, broadcast shapes)
    is planned once, so a call is a handful of numpy operations per node.
    """

    def __init__(self, sizes: Mapping[str, int], cliques: Sequence[Clique],
                 tree: tuple[list[Clique], list[tuple[Clique, Clique]]] | None = None):
        self.sizes = dict(sizes)
        self.cliques = [tuple(c) for c in cliques]
        self.nodes, self.edges = tree if tree is not None else junction_tree(self.sizes, self.cliques)
        self.home = {r: smallest_holder(self.sizes, r, self.nodes) for r in self.cliques}
        self._into = {r: self._broadcast_plan(r, self.home[r]) for r in self.cliques}
        self._out_axes = {r: [list(self.home[r]).index(c) for c in r] for r in self.cliques}
        self._parts = self._plan_parts()

    def _broadcast_plan(self, labels: Sequence[str], target: Sequence[str]):
        perm = [list(labels).index(c) for c in target if c in labels]
        return perm, [self.sizes[c] if c in labels else 1 for c in target]

    def _plan_parts(self) -> list[list[tuple]]:
        """Per connected part: (node, parent, axes to sum to the separator, separator shape in parent, in node)."""
        adjacent: dict[Clique, list[Clique]] = {n: [] for n in self.nodes}
        for a, b in self.edges:
            adjacent[a].append(b)
            adjacent[b].append(a)
        seen: set = set()
        parts = []
        for start in self.nodes:
            if start in seen:
                continue
            seen.add(start)
            plan, queue = [(start, None, None, None, None, None)], [start]
            for node in queue:
                for nb in adjacent[node]:
                    if nb in seen:
                        continue
                    seen.add(nb)
                    queue.append(nb)
                    sep = [c for c in nb if c in node]   # schema order in both
                    plan.append((nb, node,
                                 tuple(i for i, c in enumerate(nb) if c not in sep),
                                 [self.sizes[c] if c in sep else 1 for c in node],
                                 tuple(i for i, c in enumerate(node) if c not in sep),
                                 [self.sizes[c] if c in sep else 1 for c in nb]))
            parts.append(plan)
        return parts

    def beliefs(self, potentials: Mapping[Clique, np.ndarray]) -> dict[Clique, np.ndarray]:
        """Calibrated probabilities (each sums to one) of every junction-tree node."""
        table = self._calibrated(potentials)
        for t in table.values():
            t *= 1.0 / t.sum()
        return table

    def _calibrated(self, potentials: Mapping[Clique, np.ndarray]) -> dict[Clique, np.ndarray]:
        """Every junction-tree node's calibrated belief up to a factor of its own."""
        table = self._exp_potentials(potentials)
        for plan in self._parts:
            up = {}
            for node, par, node_drop, par_shape, _, _ in reversed(plan[1:]):
                msg = _sum_axes(table[node], node_drop) if node_drop else table[node].copy()
                msg *= 1.0 / max(msg.max(), 1e-300)
                up[node] = msg
                target = table[par]
                target *= msg.reshape(par_shape)
                top = target.max()
                if top < RESCALE_BELOW:   # products only shrink: keep them far from underflow
                    target *= 1.0 / max(top, 1e-300)
            for node, par, _, _, par_drop, node_shape in plan[1:]:
                down = _sum_axes(table[par], par_drop) if par_drop else table[par].copy()
                np.divide(down, up[node], out=down, where=up[node] > 0)
                down[up[node] <= 0] = 0.0
                table[node] *= down.reshape(node_shape)
        return table

    def _exp_potentials(self, potentials: Mapping[Clique, np.ndarray]) -> dict[Clique, np.ndarray]:
        """Each node's ``exp(sum of the potentials it is home to - their max)`` (fresh arrays)."""
        table = {}
        for r, theta in potentials.items():
            perm, shape = self._into[r]
            node = self.home[r]
            theta = np.transpose(theta, perm).reshape(shape)
            if node in table:
                table[node] += theta
            else:   # the first potential at a node fills its table (no zeros to add to)
                table[node] = np.broadcast_to(theta, [self.sizes[c] for c in node]).copy()
        table = {n: table[n] if n in table else np.zeros([self.sizes[c] for c in n])
                 for n in self.nodes}
        for t in table.values():
            t -= t.max()
            np.exp(t, out=t)
        return table

    def marginals(self, beliefs: Mapping[Clique, np.ndarray], total: float) -> dict[Clique, np.ndarray]:
        """``total * p(r)`` for every potential clique ``r``, from calibrated beliefs, each
        normalised on its own (the beliefs may carry any positive factor per node)."""
        out = {}
        for r in self.cliques:
            m = _sum_to_axes(beliefs[self.home[r]], self._out_axes[r])
            m *= total / m.sum()
            out[r] = m
        return out

    def __call__(self, potentials: Mapping[Clique, np.ndarray], total: float) -> dict[Clique, np.ndarray]:
        # the marginals normalise themselves: the nodes' own normalisation is skipped
        return self.marginals(self._calibrated(potentials), total)


class Contraction(NamedTuple):
    """One planned contraction of :class:`FactoredOracle`: ``np.einsum`` of the tables named
    ``inputs`` (with ``subs``) and vectors of ones (sizes ``ones``) down to ``out``, along
    ``path``, stored as ``name``; ``flops`` is numpy's count of its work."""

    inputs: list
    subs: list
    out: list
    path: object
    ones: list
    name: tuple
    flops: float


class FactoredOracle:
    """Marginals of a model with log-potentials on ``cliques``, by factored message passing in numpy.

    The same junction tree as :class:`TreeOracle`, but no node's table is
    ever built: the message from node ``i`` to its neighbour ``j`` is

        m_ij(s_ij) = sum over vars(i) - s_ij of prod_{r home at i} phi_r * prod_{k != j} m_ki,

    one ``np.einsum`` over the (small) measured-clique factors
    ``phi_r = exp(theta_r - max theta_r)`` and the incoming messages, in a
    contraction order planned once per structure (``np.einsum_path``,
    greedy). ``total * p(r)`` for a potential clique ``r`` is the same
    contraction at ``r``'s home node down to ``r``, normalised. Each message
    is scaled to max 1 (no normalised marginal changes). This is ``mbi``'s
    implicit oracle (``message_passing_fast``) in probability space: on a
    large junction tree it touches only the measured tables and separator-
    sized messages instead of every cell of every node. A separator column no
    input carries enters as a vector of ones. If a product underflows (a
    message or marginal with no positive cell), the call falls back to the
    Hugin oracle, which is exact at any scale.

    A node home to many potential cliques would repeat the product of all its
    inputs once per clique; where that is costlier than building the node's
    table ``prod_r phi_r * prod_k m_ki`` once and summing it down to each
    clique (planned once per structure from the contractions' FLOP counts,
    :meth:`_node_tables`), the oracle does the latter.
    """

    def __init__(self, sizes: Mapping[str, int], cliques: Sequence[Clique],
                 tree: tuple[list[Clique], list[tuple[Clique, Clique]]] | None = None):
        self.hugin = TreeOracle(sizes, cliques, tree)
        self.sizes, self.cliques = self.hugin.sizes, self.hugin.cliques
        self.nodes, self.edges = self.hugin.nodes, self.hugin.edges
        at: dict[Clique, list[Clique]] = {n: [] for n in self.nodes}
        for r in self.cliques:
            at[self.hugin.home[r]].append(r)
        adjacent: dict[Clique, list[Clique]] = {n: [] for n in self.nodes}
        for a, b in self.edges:
            adjacent[a].append(b)
            adjacent[b].append(a)
        self.order = self._message_order(adjacent)
        self.steps = [self._plan(i, [("m", k, i) for k in adjacent[i] if k != j] +
                                 [("p", r) for r in at[i]], tuple(c for c in i if c in j), ("m", i, j))
                      for i, j in self.order]
        self.outputs = [self._plan(self.hugin.home[r], [("m", k, self.hugin.home[r])
                                                        for k in adjacent[self.hugin.home[r]]] +
                                   [("p", q) for q in at[self.hugin.home[r]]], r, ("p", r))
                        for r in self.cliques]
        #: how many potential cliques call each node home
        self.homed = {n: len(at[n]) for n in self.nodes}
        self.node_tables = self._node_tables(adjacent, at)

    def _node_tables(self, adjacent: Mapping[Clique, list[Clique]],
                     at: Mapping[Clique, list[Clique]]) -> dict[Clique, list[tuple]]:
        """The nodes whose table is built once per call: node -> (input key, axes order, shape).

        At node ``i`` with inputs ``I`` (messages in, potentials at home) and
        potential cliques ``R`` at home, one contraction per clique costs the
        sum of their FLOP counts (numpy's path estimate); building the table
        (one broadcast product per input) and summing it down to each clique
        cost about ``|i| * (|I| + 2 |R|)`` (a sum reads the table at about half
        the speed of a product step, measured on the Adult models).
        """
        per_node: dict[Clique, float] = {}
        for r, plan in zip(self.cliques, self.outputs):
            node = self.hugin.home[r]
            per_node[node] = per_node.get(node, 0.0) + plan.flops
        built = {}
        for node, factored in per_node.items():
            inputs = [("m", k, node) for k in adjacent[node]] + [("p", q) for q in at[node]]
            if cells(self.sizes, node) * (len(inputs) + 2 * self.homed[node]) < factored:
                built[node] = [(key, *self.hugin._broadcast_plan(self._labels(key), node))
                               for key in inputs]
        return built

    def estimated_call_seconds(self) -> float:
        """CPU seconds of one call by the cost model above (planned work, no clock)."""
        contracted = [plan for r, plan in zip(self.cliques, self.outputs)
                      if self.hugin.home[r] not in self.node_tables] + self.steps
        table_cells = sum(cells(self.sizes, node) * (len(inputs) + 2 * self.homed[node])
                          for node, inputs in self.node_tables.items())
        return (FACTORED_SECONDS_PER_FLOP * sum(plan.flops for plan in contracted) +
                FACTORED_SECONDS_PER_TABLE_CELL * table_cells +
                FACTORED_SECONDS_PER_CONTRACTION * (len(self.steps) + len(self.outputs)))

    @staticmethod
    def _labels(key: tuple) -> Clique:
        """The axes of a table: a potential's clique, or a message's separator in the sender's order."""
        return tuple(key[1]) if key[0] == "p" else tuple(c for c in key[1] if c in key[2])

    def _build(self, node: Clique, inputs: list[tuple], tables: Mapping[tuple, np.ndarray]
               ) -> np.ndarray:
        """``prod`` of a node's inputs as a table over the node's columns (in-place broadcasts)."""
        table = np.empty([self.sizes[c] for c in node])
        for k, (key, perm, shape) in enumerate(inputs):
            factor = np.transpose(tables[key], perm).reshape(shape)
            if k == 0:
                table[...] = factor
            else:
                table *= factor
        return table

    @staticmethod
    def _message_order(adjacent: Mapping[Clique, list[Clique]]) -> list[tuple[Clique, Clique]]:
        """Directed edges so that each message follows every message it needs (collect, distribute)."""
        order: list[tuple[Clique, Clique]] = []
        for bfs, parent in rooted_parts(adjacent):
            order += [(n, parent[n]) for n in reversed(bfs[1:])]
            order += [(parent[n], n) for n in bfs[1:]]
        return order

    def _plan(self, node: Clique, inputs: list[tuple], out: Clique, name: tuple) -> Contraction:
        """The contraction of ``inputs`` at ``node`` down to ``out``, stored as ``name``."""
        labels = [self._labels(key) for key in inputs]
        covered = {c for lab in labels for c in lab}
        ones = [c for c in out if c not in covered]
        index = {c: k for k, c in enumerate(dict.fromkeys([c for lab in labels for c in lab] + ones))}
        subs = [[index[c] for c in lab] for lab in labels] + [[index[c]] for c in ones]
        shapes = [[self.sizes[c] for c in lab] for lab in labels] + [[self.sizes[c]] for c in ones]
        args = []
        for shape, sub in zip(shapes, subs):
            args += [np.empty(shape), sub]
        flops = float(sum(np.prod(shape) for shape in shapes))
        path = False
        if len(subs) > 1:
            path, info = np.einsum_path(*args, [index[c] for c in out], optimize="greedy")
            flops = _optimized_flops(info)
        return Contraction(inputs, subs, [index[c] for c in out], path, [self.sizes[c] for c in ones],
                           name, flops)

    def _run(self, plan: Contraction, tables: Mapping[tuple, np.ndarray]) -> np.ndarray:
        args = []
        for key, sub in zip(plan.inputs, plan.subs):
            args += [tables[key], sub]
        for size, sub in zip(plan.ones, plan.subs[len(plan.inputs):]):
            args += [np.ones(size), sub]
        return np.einsum(*args, plan.out, optimize=plan.path)

    def __call__(self, potentials: Mapping[Clique, np.ndarray], total: float) -> dict[Clique, np.ndarray]:
        tables: dict[tuple, np.ndarray] = {}
        for r, theta in potentials.items():
            tables[("p", r)] = np.exp(theta - theta.max())
        for plan in self.steps:
            msg = self._run(plan, tables)
            top = msg.max()
            if not np.isfinite(top) or top <= 0:
                return self.hugin(potentials, total)
            msg *= 1.0 / top
            tables[plan.name] = msg
        built = {node: self._build(node, inputs, tables) for node, inputs in self.node_tables.items()}
        out = {}
        for r, plan in zip(self.cliques, self.outputs):
            node = self.hugin.home[r]
            m = _sum_axes_to(built[node], node, r) if node in built else self._run(plan, tables)
            mass = m.sum()
            if not np.isfinite(mass) or mass <= 0:
                return self.hugin(potentials, total)
            out[r] = m * (total / mass)
        return out

    def beliefs(self, potentials: Mapping[Clique, np.ndarray]) -> dict[Clique, np.ndarray]:
        """Calibrated probabilities of every junction-tree node (Hugin, once per fit)."""
        return self.hugin.beliefs(potentials)


# -- sampling records from calibrated beliefs -----------------------------------------

def stratified_draw(cdf: np.ndarray, groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One code per row: row ``i`` draws from the cumulative distribution ``cdf[groups[i]]``.

    Stratified within each group: the ``n_g`` rows of group ``g``, in random
    order, get ``u = (rank + U(0,1)) / n_g``, one in each of ``n_g`` equal
    slices of [0, 1), and take the first code whose cumulative probability
    exceeds ``u``. Each code's count in a group is then its expected count
    rounded up or down (randomised rounding), not a multinomial draw.
    """
    n = groups.size
    k = cdf.shape[1]
    order = rng.permutation(n)
    by_group = order[np.argsort(groups[order], kind="stable")]
    counts = np.bincount(groups, minlength=cdf.shape[0])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(n, dtype=np.int64)
    rank[by_group] = np.arange(n) - starts[groups[by_group]]
    u = (rank + rng.random(n)) / counts[groups]
    flat = (cdf + np.arange(cdf.shape[0])[:, None]).reshape(-1)
    idx = np.searchsorted(flat, groups + u, side="right") - groups * k
    return np.clip(idx, 0, k - 1)


def sample_records(marginals: ModelMarginals, rows: int, rng: np.random.Generator
                   ) -> dict[str, np.ndarray]:
    """``rows`` records (integer codes per column) drawn from a calibrated junction tree.

    Each connected part is walked breadth-first from a root: the root's
    columns are drawn from its belief, every later node's new columns from
    ``p(new | separator)`` (its belief divided by the separator's marginal)
    given the separator values already drawn (the running-intersection
    property makes the separator exactly the node's drawn columns). Draws
    are stratified per separator value (:func:`stratified_draw`).
    """
    sizes = marginals.sizes
    data: dict[str, np.ndarray] = {}
    seen: set = set()
    for start in marginals.beliefs:
        if start in seen:
            continue
        seen.add(start)
        queue = [start]
        for node in queue:
            _draw_node(marginals.beliefs[node], node, sizes, data, rows, rng)
            for nb in marginals.adjacent[node]:
                if nb not in seen:
                    seen.add(nb)
                    queue.append(nb)
    return {c: data[c] for c in sizes}


def _draw_node(belief: np.ndarray, node: Clique, sizes: Mapping[str, int],
               data: dict[str, np.ndarray], rows: int, rng: np.random.Generator) -> None:
    """Draw the node's columns not yet in ``data`` given the ones that are."""
    given = [c for c in node if c in data]
    new = [c for c in node if c not in data]
    if not new:
        return
    table = np.transpose(belief, [node.index(c) for c in given + new])
    table = table.reshape(int(np.prod([sizes[c] for c in given], dtype=np.int64)), -1)
    mass = table.sum(axis=1, keepdims=True)
    cond = np.divide(table, mass, out=np.full_like(table, 1.0 / table.shape[1]), where=mass > 0)
    cdf = np.cumsum(cond, axis=1)
    cdf[:, -1] = 1.0
    if given:
        groups = np.ravel_multi_index([data[c] for c in given], [sizes[c] for c in given])
    else:
        groups = np.zeros(rows, dtype=np.int64)
    codes = stratified_draw(cdf, groups, rng)
    for c, values in zip(new, np.unravel_index(codes, [sizes[c] for c in new])):
        data[c] = values.astype(np.int64)
