"""Why Independent has the lowest error at small epsilon in the AIM paper's Titanic figure.

In ``reproduce.py aim-titanic --setting paper`` the independent-marginals baseline has the
lowest mean workload error at epsilon 0.316 and below on both panels, below AIM. This
benchmark re-runs AIM and Independent in that setting (the same jobs, hence the same run
ids and seeded noise) and splits each run's error into parts that can be measured:

* ``workload_error``: the run's error on its panel's workload, beside the error the
  figure's committed table holds for the same run id (``stored_workload_error``; it was
  made by the code of its row's ``code`` fingerprint, or before fingerprints were kept);
* ``one_way_error``: mean L1 error of its synthetic data's 1-way marginals;
* ``projection_error``: the workload error of the product of those 1-way marginals, i.e.
  the run's synthetic data with every dependence between columns removed;
* ``independence_floor``: the same product built from the private data's exact 1-way
  marginals (what Independent tends to as epsilon grows);
* ``rho_share``: the share of the run's rho spent on selection, on 1-way measurements and
  on larger measurements (from its ledger), with the count of each kind of measurement.

If AIM's error at small epsilon is at or above its own projection's, the pairs and
triples it measured did not help there, and the gap to Independent is the gap between
their 1-way marginals, set by the rho each puts on them. All errors are CURATOR-ONLY
diagnostics (computed from the private data without noise). ``cpu_seconds`` is this
process's running total (user + sys).

    python benchmarks/independent_lead.py > benchmarks/results/aim_titanic/independent_lead.jsonl
"""

from __future__ import annotations

import argparse
from functools import reduce

import numpy as np
import reproduce
from common import cpu_seconds, emit, require_shared

from synth_core import Synthesizer
from synth_core.evaluate import marginal_error, normalised_l1
from synth_core.experiments import job_events
from synth_core.version import code_fingerprint

MECHANISMS = ("aim", "independent")


def product_of_one_ways(one_way: dict[str, np.ndarray], clique) -> np.ndarray:
    """The clique's distribution if its columns were independent (C order, as
    :meth:`CodedTable.marginal` indexes cells)."""
    return reduce(np.multiply.outer, (one_way[c] for c in clique)).ravel()


def one_way_distributions(table) -> dict[str, np.ndarray]:
    return {c: table.marginal((c,)) / max(table.n, 1) for c in table.columns}


def projection_error(private, one_way: dict[str, np.ndarray], workload) -> float:
    """Workload error of the independent table with 1-way marginals ``one_way``."""
    return float(np.mean([normalised_l1(private.marginal(cl), product_of_one_ways(one_way, cl))
                          for cl in workload.cliques]))


def rho_shares(ledger) -> dict:
    """Shares of the ledger's total rho (the budget) by step: select, 1-way measure,
    larger measure (a measure charge's detail is its clique, columns joined by "×")."""
    total = ledger.total
    select = sum(c.rho for c in ledger.charges if c.step == "select")
    measures = [c for c in ledger.charges if c.step == "measure"]
    one = [c for c in measures if "×" not in c.detail]
    more = [c for c in measures if "×" in c.detail]
    return dict(select=select / total, one_way=sum(c.rho for c in one) / total,
                larger=sum(c.rho for c in more) / total,
                one_way_measurements=len(one), larger_measurements=len(more))


def decompose(job, stored: dict[str, float]) -> dict:
    """One run of ``job`` and its error split into the parts above."""
    synth = Synthesizer.from_config(job.config.with_option_overrides())
    for _ in job_events(synth, job):
        pass
    res = synth.result
    private, synthetic = res.inputs.data.private, res.synthetic_table
    truth, own = one_way_distributions(private), one_way_distributions(synthetic)
    return dict(
        panel=job.dataset.name, mechanism=job.mechanism.label, epsilon=job.config.epsilon,
        seed=job.config.seed, run_id=job.run_id,
        workload_error=res.curator_diagnostics().workload_error,
        stored_workload_error=stored.get(job.run_id), code=code_fingerprint(),
        one_way_error=float(np.mean([marginal_error(private, synthetic, (c,))
                                     for c in private.columns])),
        projection_error=projection_error(private, own, res.workload),
        independence_floor=projection_error(private, truth, res.workload),
        rounds=max([e.round for e in res.events], default=0),
        rho_share=rho_shares(res.ledger), cpu_seconds=cpu_seconds())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epsilons", nargs="+", type=float,
                    default=[0.01, 0.0316, 0.1, 0.316, 1.0, 3.16, 10.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS))
    args = ap.parse_args()
    require_shared()
    table = reproduce.stored_runs_table("aim-titanic", "paper")
    stored = dict(zip(table["run_id"], table["workload_error"]))
    for sweep in reproduce.build_sweeps("aim-titanic", mechanisms=args.mechanisms,
                                        seeds=args.seeds, epsilons=args.epsilons,
                                        setting="paper"):
        for job in sweep.jobs():
            emit(bench="independent-lead", **decompose(job, stored))


if __name__ == "__main__":
    main()
