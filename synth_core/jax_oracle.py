"""Factored (implicit) message passing for the compiled fit, on a plan fixed per structure.

The compiled path's oracle for large junction trees is implicit message passing
in log space: the message from junction-tree node ``i`` to its neighbour ``j``
is

    m_ij(s_ij) = log sum over vars(i) - s_ij of
                 exp(sum_{r home at i} theta_r + sum_{k != j} m_ki),

evaluated with the exp-normalise trick: each log-factor ``f`` loses its maximum
over the summed columns (per cell of the columns it keeps), is exponentiated,
the product is summed by ``einsum``, and the maxima come back after the log.
A potential clique's marginal is the same contraction at its home node down to
the clique, normalised to ``total``. These are ``mbi``'s
``message_passing_fast`` (``einsum_semistable``) in value.

What differs is the plan: the junction tree, the message order, each message's
separator columns and each contraction's operand order come from
:class:`synth_core.inference.FactoredOracle`'s plan (sorted, planned once per
structure), where ``mbi`` orders separator columns by iterating a Python set of
column names. That order follows ``PYTHONHASHSEED``, and with it the order of
the floating-point sums, so compiled fits with ``mbi``'s oracle differ in their
last digits between processes; with this plan they repeat bit for bit.
"""

from __future__ import annotations

import functools
from typing import Mapping, Sequence

import numpy as np

from .inference import Contraction, FactoredOracle

Clique = tuple[str, ...]


@functools.lru_cache(maxsize=64)
def _plan(sizes: tuple[tuple[str, int], ...], cliques: tuple[Clique, ...]) -> FactoredOracle:
    """The numpy oracle's plan of a structure (its contractions; nothing is run)."""
    return FactoredOracle(dict(sizes), cliques)


def _contract(plan: Contraction, tables: Mapping[tuple, object]):
    """One planned contraction in log space (exp-normalise per factor, as ``mbi``'s
    ``einsum_semistable``): ``log einsum(exp(f - max f)) + sum of the maxima``."""
    import jax.numpy as jnp

    out = list(plan.out)
    operands, shift = [], None
    for key, sub in zip(plan.inputs, plan.subs):
        log_factor = tables[key]
        summed = tuple(i for i, label in enumerate(sub) if label not in out)
        top = jnp.max(log_factor, axis=summed, keepdims=True) if summed else log_factor
        top = jnp.where(jnp.isfinite(top), top, 0.0)
        operands += [jnp.exp(log_factor - top), list(sub)]
        kept = [label for label in sub if label in out]
        part = _broadcast(jnp.squeeze(top, axis=summed) if summed else top, kept, out)
        shift = part if shift is None else shift + part
    for size, sub in zip(plan.ones, plan.subs[len(plan.inputs):]):
        operands += [jnp.ones(size), list(sub)]
    summed = jnp.einsum(*operands, out, optimize="greedy")
    return jnp.log(summed) + (0.0 if shift is None else shift)


def _broadcast(array, labels: Sequence[int], out: Sequence[int]):
    """``array`` with axes ``labels`` (a subset of ``out``) laid out to broadcast over ``out``."""
    import jax.numpy as jnp

    order = [label for label in out if label in labels]
    moved = jnp.transpose(array, [list(labels).index(label) for label in order])
    return moved.reshape([moved.shape[order.index(label)] if label in labels else 1
                          for label in out])


def factored_log_oracle(potentials, total):
    """Marginals ``total * p(r)`` of every clique of ``potentials`` (an ``mbi`` CliqueVector of
    log-potentials), as an ``mbi`` CliqueVector: the compiled fit's implicit oracle."""
    import jax.numpy as jnp
    from mbi import CliqueVector, Factor

    domain = potentials.domain
    cliques = tuple(tuple(cl) for cl in potentials.cliques)
    sizes = tuple((a, int(n)) for a, n in zip(domain.attributes, domain.shape))
    oracle = _plan(sizes, cliques)
    tables: dict[tuple, object] = {("p", cl): potentials[cl].values for cl in cliques}
    for step in oracle.steps:
        tables[step.name] = _contract(step, tables)
    marginals = {}
    for cl, step in zip(oracle.cliques, oracle.outputs):
        log_marginal = _contract(step, tables)
        log_marginal = log_marginal - jnp.max(log_marginal)
        mass = jnp.exp(log_marginal)
        marginals[cl] = Factor(domain.project(cl), mass * (total / jnp.sum(mass)))
    return CliqueVector(domain, cliques, marginals)
