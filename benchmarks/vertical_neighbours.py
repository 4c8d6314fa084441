"""Plain AIM under Conditional AIM's neighbour relation, in the vertical paper setting.

In the vertical paper setting (``reproduce.py vertical-adult --setting paper``) plain
AIM runs under add/remove neighbours (the paper's appendix A), while Conditional AIM is
defined only under "replace one record's private values" (bounded: ``n`` is public).
The two relations give different sensitivities, for the same rho:

* a marginal's L2 sensitivity is 1 under add/remove and sqrt(2) under bounded, so the
  Gaussian noise std ``sensitivity / sqrt(2 rho_measure)`` is sqrt(2) times larger;
* a quality score's sensitivity doubles (AIM's score ``w_r ||M_r(D) - M_r(p)||_1``
  moves by ``w_r`` under add/remove, ``2 w_r`` under bounded).

This runs the figure's AIM jobs with only ``neighbours`` changed to ``bounded``, so the
gap between plain AIM and Conditional AIM splits into the part the neighbour relation
makes and the part conditional generation makes. One JSON line per (epsilon, seed):
workload error on W and on W' (the 25% split's marginals with a private column; both
CURATOR-ONLY) and the run's CPU seconds (user + sys, ``experiments.run_job``'s; the
runs share one process). ``--summary FILE`` runs nothing: it reads such lines and prints,
per epsilon, the three cells on W (plain AIM as the figure ran it, plain AIM under the
bounded relation, Conditional AIM at 25% public columns; mean, sample sd and seeds) and
Welch's p of each against Conditional AIM.

    python benchmarks/vertical_neighbours.py --epsilons 0.1 1 10 --seeds 0 1 2 > rows.jsonl
    python benchmarks/vertical_neighbours.py --summary rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import paper_findings
import reproduce
from common import emit, require_shared, seed_cell, with_run_fields

from synth_core.experiments import Job, run_job
from synth_core.mechanisms.base import BOUNDED


def aim_jobs(epsilons, seeds) -> list[Job]:
    """The vertical paper setting's plain-AIM jobs (one split: AIM reads only the
    private table), under Conditional AIM's relation."""
    (sweep,) = reproduce.build_sweeps("vertical-adult", mechanisms=["aim"], seeds=seeds,
                                      epsilons=epsilons, setting="paper")
    return [with_run_fields(job, neighbours=BOUNDED) for job in sweep.jobs()]


def summary(rows: list[dict]) -> list[dict]:
    """Per epsilon of ``rows`` (this benchmark's lines): plain AIM (the figure's, add/remove),
    plain AIM under bounded, and Conditional AIM at 25% public columns, on W, with
    Welch's p of each AIM cell against Conditional AIM (CURATOR-ONLY values). The
    figure's cells are its ``figure.md`` cells (``reproduce.table``)."""
    split = reproduce.vertical_name(0.25)
    figure = paper_findings.cell_index(reproduce.table(
        "vertical-adult", reproduce.stored_runs_table("vertical-adult", "paper"), "paper"))
    out = []
    for eps in sorted({r["epsilon"] for r in rows if r["status"] == "finished"}):
        cells = {"aim": figure[(split, "aim", eps)],
                 "aim bounded": seed_cell(r["workload_error"] for r in rows
                                          if r["epsilon"] == eps and r["status"] == "finished"),
                 "conditional-aim": figure[(split, "conditional-aim", eps)]}
        cond = cells["conditional-aim"]
        out.append({"epsilon": eps,
                    **{k: {m: round(c[m], 4) if c[m] is not None else None
                           for m in ("mean", "sd")} | {"seeds": c["seeds"]}
                       for k, c in cells.items()},
                    **{f"{k} minus conditional-aim": round(cells[k]["mean"] - cond["mean"], 4)
                       for k in ("aim", "aim bounded")},
                    **{f"{k} welch_p": paper_findings.welch_p(cells[k], cond)
                       for k in ("aim", "aim bounded")}})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--summary", type=Path, metavar="FILE",
                    help="print the comparison from this file's lines; run nothing")
    args = ap.parse_args()
    if args.summary:
        if not args.summary.is_file():
            sys.exit(f"--summary: no file {args.summary} (give this benchmark's JSON lines)")
        rows = [json.loads(line) for line in args.summary.read_text().splitlines() if line]
        for record in summary([r for r in rows if r.get("bench") == "vertical-neighbours"]):
            emit(bench="vertical-neighbours-summary", dataset=reproduce.vertical_name(0.25),
                 **record)
        return
    require_shared()
    for job in aim_jobs(args.epsilons, args.seeds):
        row, _ = run_job(job)
        emit(bench="vertical-neighbours", dataset=job.dataset.name, mechanism="aim",
             neighbours=job.config.neighbours, epsilon=job.config.epsilon,
             seed=job.config.seed, status=row["status"],
             workload_error=row.get("workload_error"),
             workload_error_private=row.get("workload_error_private"),
             rounds=row.get("rounds"), cpu_seconds=row.get("cpu_seconds"))


if __name__ == "__main__":
    main()
