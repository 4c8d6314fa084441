"""Workload error and per-marginal error.

CURATOR-ONLY: every value here is computed from the private data without
noise. The workbench shows them labelled as such; release files never
contain them.

Workload error of synthetic data ``S`` against ``D`` (JAM-PGM Def. 2.8):
``(1 / |W|) * sum_{r in W} || M_r(D)/n - M_r(S)/|S| ||_1``; with ``|S| = n``
this is ``(1 / (n |W|)) sum_r ||M_r(D) - M_r(S)||_1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .marginals import CodedTable
from .workload import Workload


@dataclass(frozen=True)
class CuratorDiagnostics:
    """CURATOR-ONLY error figures of one synthetic table."""

    workload_error: float
    per_marginal: dict

    def to_json(self) -> dict:
        return {
            "label": "CURATOR-ONLY: computed from the private data without noise; do not release",
            "workload_error": self.workload_error,
            "per_marginal_error": [{"clique": list(k), "error": v} for k, v in self.per_marginal.items()],
        }


def normalised_l1(a: np.ndarray, b: np.ndarray) -> float:
    """L1 distance between two count vectors of one marginal, each scaled to sum one."""
    return float(np.abs(a / (a.sum() or 1.0) - b / (b.sum() or 1.0)).sum())


def marginal_error(private: CodedTable, other: CodedTable, clique) -> float:
    """L1 distance between the normalised marginals of two tables."""
    return normalised_l1(private.marginal(clique), other.marginal(clique))


def per_marginal_errors(private: CodedTable, other: CodedTable, workload: Workload) -> dict:
    return {cl: marginal_error(private, other, cl) for cl in workload.cliques}


def workload_error(private: CodedTable, other: CodedTable, workload: Workload) -> float:
    return float(np.mean(list(per_marginal_errors(private, other, workload).values())))


def diagnostics(private: CodedTable, synthetic: CodedTable, workload: Workload) -> CuratorDiagnostics:
    errs = per_marginal_errors(private, synthetic, workload)
    return CuratorDiagnostics(float(np.mean(list(errs.values()))), errs)
