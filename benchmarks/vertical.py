"""Public columns on Adult (the vertical paper's experiment): AIM, vJAM-PGM,
Conditional AIM and Conditional vJAM-PGM with 25%, 50% and 75% of the columns
public, over epsilons and seeds.

Data: ``../shared/data/adult`` (48,842 rows, 15 columns, Private-PGM domain).
Workload: all 3-way marginals, delta 1e-9, bounded DP. The public columns are
the first ``round(f * 15)`` of :data:`PUBLIC_ORDER` (demographics first: the
attributes most often public in practice). Each run executes in its own
process, so ``peak_rss_mb`` is that run's peak. Every run reports two errors
(curator-only diagnostics):

* ``error_all``: workload error on the whole all-3-way workload ``W``;
* ``error_private``: on ``W'``, the 3-way marginals with at least one private
  column (the vertical paper's measure for conditional methods; conditional methods are
  exact on the others).

Plain AIM ignores the split, so one run of it is scored on the ``W'`` of
every fraction asked for (the extra rows carry ``shared_run``: the fraction
whose run they share).

Results are appended to ``benchmarks/results/vertical_adult/runs.jsonl`` (one JSON line
per run, printed too); a finished (fraction, mechanism, epsilon, seed) is
skipped when the script runs again, so it can be stopped and resumed.

    python benchmarks/vertical.py --fractions 0.25 0.5 0.75 --epsilons 0.1 1 10 --seeds 0 1 2
    python benchmarks/vertical.py --summary          # table of means and the orderings
    python benchmarks/vertical.py --findings --score all   # the paper's claims, checked
    python benchmarks/vertical.py --markdown --score all   # the table on W instead of W'
    python benchmarks/vertical.py --missing          # runs still to do, with their commands

``--score`` chooses what the tables and orderings compare: ``private`` (the
default) scores every mechanism on ``W'``, ``all`` on ``W``. The paper runs
AIM and vJAM-PGM on ``W`` and the conditional methods on ``W'``; on ``W`` the
all-public marginals count too: the conditional methods are exact on them,
vJAM-PGM measures the ones it selects exactly, and plain AIM measures them
with noise like any other.

Counterfactual (``--rho-scale 2``): the run gets twice the zCDP budget of its
nominal epsilon and is stored as ``<mechanism>@rho x2``. Under bounded DP a
marginal's L2 sensitivity is sqrt(2), so twice the rho gives the Gaussian noise
an unbounded-DP (add/remove) run has at the nominal epsilon; the selection
stays sqrt(2) noisier than there. It answers "what if this mechanism had
run under AIM's own (unbounded) default?" and is never a release setting;
``--summary`` leaves these rows out of the ordering.

Diagnostics for comparing two runs: every row carries
``error_by_public_count``, the error on ``W'`` split by how many public
columns a marginal has (``"0"``: all private), and ``--trace DIR`` writes
each run's round events (clique, source, sigma, rho, model size: the
release part of the event) to ``DIR/<fraction>_<mechanism>_<eps>_<seed>.jsonl``;
``--compare-traces FILE...`` summarises such files side by side.
``--curator-trace DIR`` (CURATOR-ONLY: exact scores from the private data)
writes, per selection round, the pick's score and model error before its
measurement, and the previous pick's model error after the refit
(``absorbed``: the share of its error that measurement removed), to
``DIR/<run>.curator-only.jsonl``.

    python benchmarks/vertical.py --fractions 0.25 --compare-traces benchmarks/results/vertical_adult/traces/0.25_*_10_0.jsonl

Sampling. Conditional runs record ``sampling`` (``synth_core.conditional.
CONDITIONAL_SAMPLING``: systematic draws) and score the same fitted model a
second time with independent per-record draws: ``error_private_iid`` and
``error_by_public_count_iid`` give the sampling step's share of the error
without a second fit. Conditional rows without a ``sampling`` field drew
every record independently and are read as ``<mechanism>@iid sampling``.
``error_private_model`` and ``error_by_public_count_model`` score the
fitted model's expected output instead of the one synthetic table (see
:func:`own_output_errors`): how the models compare without sampling noise.

Timing: ``seconds`` and ``cpu_seconds`` cover the run (fit and synthetic
table); ``scoring_seconds`` the benchmark's scoring and extra draws. Rows
without ``scoring_seconds`` counted both in ``seconds`` and ``cpu_seconds``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from common import DATA, ROOT, cpu_seconds, emit, peak_rss_mb, require_shared, seed_cell

PUBLIC_ORDER = ["sex", "race", "age", "native-country", "marital-status", "relationship",
                "education", "education-num", "workclass", "occupation", "hours-per-week",
                "fnlwgt", "capital-gain", "capital-loss", "income>50K"]
MECHANISMS = {
    "aim": ("aim", False),
    "vjam-pgm": ("vjam-pgm", False),
    "conditional-aim": ("aim", True),
    "conditional-vjam-pgm": ("vjam-pgm", True),
}
FOLDER = ROOT / "benchmarks" / "results" / "vertical_adult"
RESULTS = FOLDER / "runs.jsonl"
#: the label suffix of conditional runs made with independent per-record draws
IID_SUFFIX = "@iid sampling"


def public_columns(fraction: float) -> list[str]:
    return PUBLIC_ORDER[:int(round(fraction * len(PUBLIC_ORDER)))]


def default_fit_iters(label: str) -> int:
    """The mechanism's own per-round fit iterations (AIM 1,000, vJAM-PGM 100)."""
    from synth_core.mechanisms import resolve_fit_iters

    return resolve_fit_iters(MECHANISMS[label][0], None)


def stored_label(label: str, rho_scale: float, fit_iters: int | None = None,
                 rounds: int | None = None) -> str:
    """The label a run is stored under: ``@rho x..``, ``@fit_iters ..`` and
    ``@rounds ..`` mark runs whose budget, per-round fit iterations or rounds
    option (AIM: the budget scale T) are not the mechanism's own."""
    out = label if rho_scale == 1 else f"{label}@rho x{rho_scale:g}"
    if fit_iters is not None and fit_iters != default_fit_iters(label):
        out += f"@fit_iters {fit_iters}"
    if rounds is not None:
        out += f"@rounds {rounds}"
    return out


def uses_public_columns(label: str) -> bool:
    """Plain AIM ignores the split: one run of it serves every fraction."""
    name, conditional = MECHANISMS[label]
    return name == "vjam-pgm" or conditional


def trace_name(fraction: float, label: str, epsilon: float, seed: int, rho_scale: float = 1.0,
               fit_iters: int | None = None, rounds: int | None = None) -> str:
    """A trace file's name: ``<fraction>_<mechanism>_<epsilon>_<seed>.jsonl``, and
    for a run whose budget, fit iterations or rounds are not the mechanism's own
    a short digest of its stored label before ``.jsonl`` (the parameters
    themselves are columns of the folder's ``index.jsonl``)."""
    import hashlib

    base = f"{fraction:g}_{label}_{epsilon:g}_{seed}"
    stored = stored_label(label, rho_scale, fit_iters, rounds)
    if stored != label:
        base += "_" + hashlib.sha1(stored.encode()).hexdigest()[:6]
    return base + ".jsonl"


def write_trace(folder: Path, name: str, records, fraction: float, label: str, epsilon: float,
                seed: int, rho_scale: float, fit_iters: int | None, rounds: int | None) -> None:
    """Write one trace file (one JSON line per record) and its row of
    ``folder/index.jsonl`` (file name and run parameters; a rewritten file's
    row replaces its old one)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    index = folder / "index.jsonl"
    rows = [json.loads(l) for l in index.read_text().splitlines() if l.strip()] \
        if index.exists() else []
    rows = [r for r in rows if r["file"] != name] + [dict(
        file=name, public_fraction=fraction, mechanism=label, epsilon=epsilon, seed=seed,
        rho_scale=rho_scale, fit_iters=fit_iters, rounds=rounds)]
    index.write_text("".join(json.dumps(r) + "\n" for r in sorted(rows, key=lambda r: r["file"])))


def run_one(fraction: float, label: str, epsilon: float, seed: int,
            condition_max_mb: float | None = None, rho_scale: float = 1.0,
            fit_iters: int | None = None, also: tuple[float, ...] = (),
            trace: Path | None = None, rounds_option: int | None = None,
            curator_trace: Path | None = None) -> list[dict]:
    """One run; for plain AIM also the rows of the ``also`` fractions (the same
    synthetic data scored on their ``W'``; ``shared_run`` names the fraction run)."""
    from synth_core import Synthesizer
    from synth_core.conditional import CONDITIONAL_SAMPLING, conditional_workload
    from synth_core.evaluate import per_marginal_errors
    from synth_core.privacy import cdp_epsilon, rho_from_epsilon_delta
    from synth_core.schema import load_schema

    name, conditional = MECHANISMS[label]
    nominal = epsilon
    if rho_scale != 1:
        epsilon = cdp_epsilon(rho_scale * rho_from_epsilon_delta(epsilon, 1e-9), 1e-9)
    public = public_columns(fraction)
    options = {"conditional": True} if conditional else {}
    if conditional and condition_max_mb is not None:
        options["condition_max_mb"] = condition_max_mb
    if fit_iters is not None:
        options["fit_iters"] = fit_iters
    if rounds_option is not None:
        options["rounds"] = rounds_option
    label_stored = stored_label(label, rho_scale, fit_iters, rounds_option)
    synth = Synthesizer(name, epsilon=epsilon, delta=1e-9, workload="all-3way",
                        neighbours="bounded", seed=seed, max_model_size=80.0, **options)
    start, cpu0 = time.perf_counter(), cpu_seconds()
    rounds = public_rounds = 0
    if also and uses_public_columns(label):
        raise ValueError(f"{label} depends on the split: run each fraction on its own")
    events, raw = [], []
    for event in synth.run(str(DATA / "adult" / "adult.csv"), schema=load_schema(DATA / "adult" / "domain.json"),
                           public_columns=public if uses_public_columns(label) else ()):
        print(f"[{fraction} {label} eps={epsilon} seed={seed}] {event.describe()}",
              file=sys.stderr, flush=True)
        events.append(event.to_release())
        if curator_trace is not None:
            raw.append(event)
        if event.round > 0:
            rounds += 1
            public_rounds += event.source != "private"
    name = trace_name(fraction, label, nominal, seed, rho_scale, fit_iters, rounds_option)
    if trace is not None:
        write_trace(trace, name, events, fraction, label, nominal, seed, rho_scale, fit_iters,
                    rounds_option)
    res = synth.result
    # the run's own time; the benchmark's extra draws below are timed apart
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu0
    if curator_trace is not None:
        write_trace(curator_trace, name.replace(".jsonl", ".curator-only.jsonl"),
                    curator_round_records(raw, res.inputs.data.private.cells,
                                          getattr(synth.engine.mechanism, "weights", None)),
                    fraction, label, nominal, seed, rho_scale, fit_iters, rounds_option)
    private, synthetic = res.inputs.data.private, res.synthetic_table
    cond = res.report.get("conditional_generation") or {}
    errors = per_marginal_errors(private, synthetic, res.workload)
    iid_errors = resampled_iid_errors(res) if res.model is not None and cond else None
    model_errors = own_output_errors(res, bool(cond)) if res.model is not None else None
    shared = dict(bench="vertical", data="adult",
                  mechanism=label_stored, epsilon=nominal, seed=seed,
                  rho_scale=rho_scale, epsilon_run=epsilon,
                  condition_max_mb=cond.get("condition_max_mb"),
                  error_all=statistics.mean(errors.values()),
                  seconds=seconds, cpu_seconds=cpu,
                  scoring_seconds=time.perf_counter() - start - seconds,
                  rounds=rounds, public_rounds=public_rounds, rho_spent=res.ledger.spent,
                  rho_total=res.ledger.total,
                  conditioning_marginals=len(cond.get("conditioning_marginals", [])),
                  conditioning_dropped=len(cond.get("conditioning_marginals_dropped", [])),
                  fit_iters=synth.config.round_fit_iters,
                  fit_oracle=synth.engine.estimator.last_oracle, peak_rss_mb=peak_rss_mb(),
                  **({"sampling": CONDITIONAL_SAMPLING} if cond else {}))
    out = []
    for f in (fraction, *also):
        cols = public_columns(f)
        restricted = conditional_workload(res.workload, cols)
        out.append(dict(shared, public_fraction=f, public_columns=cols,
                        error_private=statistics.mean(errors[cl] for cl in restricted.cliques),
                        error_by_public_count=by_public_count(errors, restricted, cols),
                        **({"shared_run": fraction} if f != fraction else {}),
                        **scored("_model", model_errors, restricted, cols),
                        **scored("_iid", iid_errors, restricted, cols)))
    return out


#: conditional runs: independent draws averaged for the expected output
EXPECTED_DRAWS = 16


def scored(suffix: str, errors: dict | None, restricted, cols: list[str]) -> dict:
    """``error_private<suffix>`` and ``error_by_public_count<suffix>`` on ``W'``."""
    if errors is None:
        return {}
    return {f"error_private{suffix}": statistics.mean(errors[cl] for cl in restricted.cliques),
            f"error_by_public_count{suffix}": by_public_count(errors, restricted, cols)}


def own_output_errors(res, conditional: bool) -> dict:
    """Per-marginal errors of the fitted model's expected output, without the
    sampling noise of the one synthetic table: for plain sampling the model's
    own marginals; for conditional generation (whose expected output also
    depends on the records' public values) the average of
    :data:`EXPECTED_DRAWS` independent conditional draws, which leaves a
    quarter of one draw's noise."""
    from synth_core.evaluate import normalised_l1
    from synth_core.marginals import CodedTable

    private, cliques = res.inputs.data.private, res.workload.cliques
    if not conditional:
        model = res.model.counts_many(cliques)
        return {cl: normalised_l1(model[cl], private.marginal(cl)) for cl in cliques}
    total = {cl: 0.0 for cl in cliques}
    for i in range(EXPECTED_DRAWS):
        table = CodedTable.from_frame(conditional_draw(res, "iid", 10 + i), res.inputs.schema.sizes)
        for cl in cliques:
            total[cl] = total[cl] + table.marginal(cl)
    return {cl: normalised_l1(total[cl], private.marginal(cl)) for cl in cliques}


def conditional_draw(res, method: str, stream: int):
    """The run's fitted model sampled again conditionally (codes of every column)."""
    from synth_core.backends.inputs import own_public_codes
    from synth_core.conditional import generate_conditionally

    public = tuple(res.report["conditional_generation"]["conditioned_on"])
    return generate_conditionally(res.model, own_public_codes(res.inputs, public), public,
                                  np.random.default_rng([res.config.seed or 0, stream]),
                                  method=method)


def resampled_iid_errors(res) -> dict:
    """Per-marginal errors of the same fitted model's output drawn with independent
    per-record draws (``method="iid"``, the sampler before systematic draws):
    the sampling step's share of the error, on the same fit."""
    from synth_core.evaluate import per_marginal_errors
    from synth_core.marginals import CodedTable

    table = CodedTable.from_frame(conditional_draw(res, "iid", 2), res.inputs.schema.sizes)
    return per_marginal_errors(res.inputs.data.private, table, res.workload)


def sampling_floor(fractions: list[float], seeds: list[int]) -> None:
    """One JSON line per fraction and seed: the L1 error (normalised, as the
    workload error) of a multinomial sample of ``n`` records drawn from each
    all-3-way marginal of Adult itself, by number of public columns on ``W'``."""
    import pandas as pd

    from synth_core.conditional import conditional_workload
    from synth_core.evaluate import normalised_l1
    from synth_core.marginals import CodedTable
    from synth_core.schema import load_schema
    from synth_core.workload import parse_workload

    schema = load_schema(DATA / "adult" / "domain.json")
    table = CodedTable.from_frame(schema.encode(pd.read_csv(DATA / "adult" / "adult.csv")),
                                  schema.sizes)
    workload = parse_workload("all-3way", list(schema.sizes))
    for seed in seeds:
        rng = np.random.default_rng(seed)
        errors = {}
        for cl in workload.cliques:
            q = table.marginal(cl).ravel()
            errors[cl] = normalised_l1(rng.multinomial(table.n, q / q.sum()), q)
        for f in fractions:
            cols = public_columns(f)
            restricted = conditional_workload(workload, cols)
            emit(bench="vertical-sampling-floor", public_fraction=f, seed=seed, n=table.n,
                 error_private=statistics.mean(errors[cl] for cl in restricted.cliques),
                 error_by_public_count=by_public_count(errors, restricted, cols))


def by_public_count(errors: dict, workload, public: list[str]) -> dict[str, float]:
    """Mean error of the workload's marginals by their number of public columns."""
    groups: dict = {}
    for cl in workload.cliques:
        groups.setdefault(str(len(set(cl) & set(public))), []).append(errors[cl])
    return {k: statistics.mean(v) for k, v in sorted(groups.items())}


def trace_summary(events: list[dict], public: list[str]) -> dict:
    """What a traced run measured after its initialisation: the private
    marginals in order (with their noise sigma), how many touch the public
    columns, the rounds in which sigma was halved, and the final model size."""
    rounds = [e for e in events if e["round"] > 0]
    private = [e for e in rounds if e["source"] == "private"]
    sigmas = [e["sigma"] for e in private]
    # the rounds whose sigma is below the round before (the last: the remaining budget);
    # a relative margin, since a constant sigma recomputed from the ledger (JAM-PGM's
    # schedule) differs from round to round in its last bits
    lowered = [e["round"] for a, e in zip(private, private[1:])
               if e["sigma"] < a["sigma"] * (1 - 1e-9)]
    return {"rounds": len(rounds), "private_measurements": len(private),
            "with_public_column": sum(bool(set(e["cliques"][0]) & set(public)) for e in private),
            "by_size": {str(k): sum(len(e["cliques"][0]) == k for e in private) for k in (1, 2, 3)},
            "sigma_halvings": len(lowered),
            "sigma_lowered_at": lowered,
            "first_sigma": sigmas[0] if sigmas else None, "last_sigma": sigmas[-1] if sigmas else None,
            "model_size_mb": rounds[-1]["model_size_mb"] if rounds else None,
            "measured": ["+".join(e["cliques"][0]) for e in private]}


def curator_round_records(events, cells, weights: dict[tuple, float] | None = None) -> list[dict]:
    """CURATOR-ONLY: per selection round, the exact score of the marginal
    chosen, its model error before the measurement and the model error of the
    *previous* round's pick now that the model has been refitted with it.
    ``absorbed`` is the share of that marginal's model error the measurement
    and refit removed (1: all of it; 0 or less: none).

    A private pick is scored ``w * (error - sqrt(2/pi) sigma cells)``, so its
    error is ``score / w + sqrt(2/pi) sigma cells``; ``weights`` maps a clique
    to its ``w`` (AIM's workload weights; none: 1, as JAM-PGM and vJAM-PGM) and
    ``cells(clique)`` gives its number of cells. A round whose pick was
    measured exactly (a public pick: its event has no sigma) is skipped, and
    the round after it reports no previous pick. Computed from the private
    data without noise: never released."""
    from synth_core.engine import expected_noise_l1
    out, prev = [], None
    for ev in events:
        cur = ev.curator
        if cur is None or ev.sigma is None:
            prev = None
            continue
        score = {tuple(c.clique): s for c, s in zip(cur.candidates, cur.scores)}

        def error(cl, sigma=ev.sigma, score=score):
            return score[cl] / (weights or {}).get(cl, 1.0) + expected_noise_l1(sigma, cells(cl))

        chosen = tuple(cur.candidates[cur.chosen].clique)
        ranked = sorted(score, key=score.get, reverse=True)
        rec = {"round": ev.round, "chosen": "+".join(chosen), "sigma": ev.sigma,
               "chosen_score": score[chosen], "chosen_rank": ranked.index(chosen) + 1,
               "chosen_error": error(chosen),
               "chosen_noise_l1": expected_noise_l1(ev.sigma, cells(chosen)),
               "top": "+".join(ranked[0]), "top_score": score[ranked[0]],
               "candidates": len(score)}
        if prev is not None and prev["clique"] in score:
            now = error(prev["clique"])
            rec.update(previous=prev["name"], previous_score_now=score[prev["clique"]],
                       previous_error_now=now,
                       absorbed=1 - now / prev["error"] if prev["error"] > 0 else None)
        prev = {"clique": chosen, "name": rec["chosen"], "error": rec["chosen_error"]}
        out.append(rec)
    return out


def compare_traces(paths: list[Path], fraction: float) -> None:
    """One JSON line per traced run (see :func:`trace_summary`), then the
    marginals each measured that the others did not."""
    public = public_columns(fraction)
    summaries = {path.stem: trace_summary([json.loads(l) for l in path.read_text().splitlines()
                                           if l.strip()], public) for path in paths}
    for name, summ in summaries.items():
        emit(bench="vertical-trace", run=name, public_fraction=fraction, **summ)
    for name, summ in summaries.items():
        others = set().union(*(set(s["measured"]) for n, s in summaries.items() if n != name))
        emit(bench="vertical-trace-only", run=name,
             measured_only_here=sorted(set(summ["measured"]) - others))


def key(r: dict) -> tuple:
    return (r["public_fraction"], r["mechanism"], r["epsilon"], r["seed"])


def read_rows(*paths: Path) -> list[dict]:
    """The runs of these files; a run in a later file replaces the same run in an earlier."""
    rows: dict = {}
    for path in paths:
        if path.exists():
            for line in path.read_text().splitlines():
                if line.strip():
                    r = with_sampling_label(json.loads(line))
                    rows[key(r)] = r
    return list(rows.values())


def with_sampling_label(row: dict) -> dict:
    """A conditional run whose row has no ``sampling`` field drew every record
    independently: it is a result of ``<mechanism>@iid sampling``, not of the
    default (systematic draws)."""
    if not row["mechanism"].startswith("conditional-") or "sampling" in row:
        return row
    return dict(row, mechanism=row["mechanism"] + IID_SUFFIX, sampling="iid")


def done_keys(path: Path) -> set:
    return {key(r) for r in read_rows(path)}


def figure_rows(paths: list[Path], field: str = "error_private") -> list[dict]:
    """Mean, min and max of ``field`` over seeds per (fraction, mechanism, epsilon),
    as ``reproduce.table`` rows (counterfactual runs left out)."""
    groups: dict = {}
    for r in read_rows(*paths):
        if "@" not in r["mechanism"]:
            name = f"adult, {int(r['public_fraction'] * 100)}% columns public"
            groups.setdefault((name, r["mechanism"], r["epsilon"]), []).append(r)
    return [{"dataset": d, "mechanism": m, "epsilon": e,
             **seed_cell(x[field] for x in rs),
             "cpu_seconds": statistics.mean(x["cpu_seconds"] for x in rs)}
            for (d, m, e), rs in sorted(groups.items())]


def figure_chart(rows: list[dict]):
    """``reproduce.py``'s chart of Figure 2 (Altair) for ``figure_rows``, set for
    reading at a glance: epsilon ticks (and grid lines) only at the epsilons
    run, min-max bars thick enough to see, panel titles in the axis titles' size."""
    import altair as alt
    import reproduce

    chart = reproduce.plot_figure("vertical-adult", rows)
    ticks = alt.Axis(values=sorted({float(r["epsilon"]) for r in rows}), labelFontSize=11)
    for layer in chart.spec.layer:
        layer.encoding.x.axis = ticks
    return (chart.configure_rule(strokeWidth=2.5)
            .configure_header(labelFontSize=13, labelFontWeight="bold")
            .configure_title(fontSize=15, offset=12))


def figure(paths: list[Path]) -> None:
    """The vertical paper's Figure 2 from these runs (``--results``; default the
    committed ``runs.jsonl``): ``figure.md`` as ``reproduce.py vertical-adult``
    writes it, ``figure.png`` and ``figure.svg`` (Altair through vl-convert, no
    browser); counterfactual runs left out. Runs nothing."""
    import reproduce

    from synth_core.errors import ConfigError
    from synth_core.notebook import save_figure

    rows = figure_rows(paths)
    if not rows:
        sys.exit(f"no runs in {', '.join(map(str, paths))}: nothing to draw")
    out = reproduce.folder("vertical-adult")
    out.mkdir(parents=True, exist_ok=True)
    reproduce.write_markdown("vertical-adult", rows, out / "figure.md")
    chart = figure_chart(rows)
    try:
        save_figure(chart, out / "figure.png", scale=1.25)
        save_figure(chart, out / "figure.svg")
    except (ConfigError, ImportError) as exc:
        print(f"{exc}: no figure written", file=sys.stderr)
        return
    print(f"wrote {out / 'figure.png'} and figure.svg", file=sys.stderr)


def missing_runs(rows: list[dict], fractions, mechanisms, epsilons, seeds) -> list[dict]:
    """The runs at the mechanisms' defaults not in ``rows`` yet: one entry per
    (fraction, mechanism, epsilon) with the seeds left, the mean CPU seconds
    of that cell's finished runs (``None`` if none; rows without
    ``scoring_seconds`` include the scoring draws) and the command."""
    finished = [r for r in rows if not r.get("failed")]
    done = {key(r) for r in finished}
    out = []
    for frac in fractions:
        for eps in epsilons:
            for label in mechanisms:
                left = [s for s in seeds if (frac, label, eps, s) not in done]
                if not left:
                    continue
                cpu = [r["cpu_seconds"] for r in finished
                       if key(r)[:3] == (frac, label, eps) and "cpu_seconds" in r]
                out.append(dict(public_fraction=frac, mechanism=label, epsilon=eps, seeds=left,
                                cpu_seconds_per_run=statistics.mean(cpu) if cpu else None,
                                command=f"python benchmarks/vertical.py --fractions {frac:g} "
                                        f"--mechanisms {label} --epsilons {eps:g} --seeds "
                                        + " ".join(map(str, left))))
    return out


#: what ``--score`` scores the tables and orderings on: W' or W, and the row field
SCORES = {"private": "error_private", "all": "error_all"}


def summary(paths: list[Path], score: str = "private") -> None:
    field = SCORES[score]
    rows = read_rows(*paths)
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["public_fraction"], r["epsilon"]), {}).setdefault(r["mechanism"], []).append(r)
    for (frac, eps), by_mech in sorted(groups.items()):
        means, means_all = ({m: statistics.mean(x[f] for x in rs) for m, rs in by_mech.items()}
                            for f in ("error_private", "error_all"))
        scored_means = {"error_private": means, "error_all": means_all}[field]
        real = {m: v for m, v in scored_means.items() if "@" not in m}   # counterfactuals aside
        best = min(real, key=real.get)
        vjam, aim = scored_means.get("vjam-pgm"), scored_means.get("aim")
        emit(bench="vertical-summary", public_fraction=frac, epsilon=eps, scored_on=score,
             seeds={m: len(rs) for m, rs in by_mech.items()},
             error_private=means, error_all=means_all,
             seconds={m: statistics.mean(x["seconds"] for x in rs) for m, rs in by_mech.items()},
             peak_rss_mb={m: max(x["peak_rss_mb"] for x in rs) for m, rs in by_mech.items()},
             lowest=best, missing=sorted(set(MECHANISMS) - set(real)),
             # None: a run the ordering needs is missing
             conditional_aim_lowest=(best == "conditional-aim" if len(real) == len(MECHANISMS)
                                     else None),
             vjam_beats_aim=None if vjam is None or aim is None else vjam < aim)


#: the Markdown table's columns: (stored label, heading)
TABLE_COLUMNS = [("aim", "AIM"), ("aim@fit_iters 100", "AIM, 100 it."),
                 ("vjam-pgm", "vJAM-PGM"), ("vjam-pgm@fit_iters 1000", "vJAM-PGM, 1,000 it."),
                 ("conditional-aim", "Cond. AIM"),
                 ("conditional-aim" + IID_SUFFIX, "Cond. AIM, iid draws"),
                 ("conditional-aim@fit_iters 100" + IID_SUFFIX, "Cond. AIM, 100 it., iid draws"),
                 ("conditional-vjam-pgm", "Cond. vJAM-PGM"),
                 ("conditional-vjam-pgm" + IID_SUFFIX, "Cond. vJAM-PGM, iid draws")]


def markdown(paths: list[Path], score: str = "private") -> None:
    """The summary as a Markdown table (benchmarks/results/vertical_adult/README.md):
    mean error on W' (``score="all"``: on W),
    seeds and peak MiB per mechanism; "100 it." columns are AIM runs with 100
    fit iterations per round (AIM's default is its authors' 1,000),
    "vJAM-PGM, 1,000 it." vJAM-PGM with 1,000 instead of its default 100;
    "iid draws" conditional runs whose records' private values were drawn
    independently (rows without a ``sampling`` field);
    "lowest" is among the four mechanisms at their defaults."""
    field = SCORES[score]
    rows = read_rows(*paths)
    groups: dict = {}
    for r in rows:
        if not r.get("failed"):
            groups.setdefault((r["public_fraction"], r["epsilon"]), {}).setdefault(
                r["mechanism"], []).append(r)
    names = dict(TABLE_COLUMNS)
    print("| public | eps | " + " | ".join(h for _, h in TABLE_COLUMNS) + " | lowest |")
    print("|---" * (len(TABLE_COLUMNS) + 3) + "|")
    for (frac, eps), by_mech in sorted(groups.items()):
        cells, means = [], {}
        for label, _ in TABLE_COLUMNS:
            rs = by_mech.get(label)
            if not rs:
                cells.append("not run")
                continue
            means[label] = statistics.mean(x[field] for x in rs)
            peak = max(x["peak_rss_mb"] for x in rs)
            cells.append(f"{means[label]:.4f} ({len(rs)} seed{'s' if len(rs) > 1 else ''}, "
                         f"{peak:,.0f} MiB)")
        real = {m: means[m] for m in MECHANISMS if m in means}
        lowest = names[min(real, key=real.get)] if len(real) == len(MECHANISMS) else "incomplete"
        print(f"| {int(round(frac * 100))}% | {eps:g} | " + " | ".join(cells) + f" | {lowest} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fractions", nargs="+", type=float, default=[0.25, 0.5, 0.75])
    ap.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS), choices=list(MECHANISMS))
    ap.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--condition-max-mb", type=float, default=None,
                    help="bound on the conditioning marginals' model (MB; default: the library's)")
    ap.add_argument("--rho-scale", type=float, default=1.0,
                    help="counterfactual: run with this multiple of the nominal rho (see above)")
    ap.add_argument("--fit-iters", type=int, default=None,
                    help="mirror-descent iterations per round (default: the library's); a run "
                         "with it is stored as '<mechanism>@fit_iters N'")
    ap.add_argument("--rounds", type=int, default=None,
                    help="the mechanism's rounds option (AIM: budget scale T; default: its "
                         "own); a run with it is stored as '<mechanism>@rounds N'")
    ap.add_argument("--figure", action="store_true",
                    help="write benchmarks/results/vertical_adult/figure.png, .svg and .md "
                         "from the results (--results; runs nothing)")
    ap.add_argument("--results", type=Path, default=RESULTS,
                    help="the results file to append to (default: %(default)s)")
    ap.add_argument("--markdown", action="store_true",
                    help="print the results as the Markdown table of "
                         "benchmarks/results/vertical_adult/README.md")
    ap.add_argument("--score", choices=list(SCORES), default="private",
                    help="what --markdown and --summary score and order the mechanisms on: "
                         "'private', W' (the 3-way marginals with a private column), or "
                         "'all', W (every 3-way marginal; conditional runs are exact on the "
                         "all-public ones) (default: %(default)s)")
    ap.add_argument("--summary", action="store_true",
                    help="print the summary of the results file")
    ap.add_argument("--findings", action="store_true",
                    help="print the vertical paper's claims checked on --score "
                         "(benchmarks/paper_findings.py)")
    ap.add_argument("--missing", action="store_true",
                    help="list the runs of --fractions x --mechanisms x --epsilons x --seeds "
                         "(at the defaults) not in the results yet, with their commands")
    ap.add_argument("--trace", type=Path, default=None,
                    help="write each run's round events (release part) to DIR/<run>.jsonl")
    ap.add_argument("--curator-trace", type=Path, default=None,
                    help="CURATOR-ONLY diagnostic: write each selection round's exact scores "
                         "(the pick's model error before its measurement and after the refit) "
                         "to DIR/<run>.curator-only.jsonl; never part of a release")
    ap.add_argument("--compare-traces", nargs="+", type=Path, metavar="TRACE",
                    help="summarise these --trace files (the first --fractions value gives the "
                         "public columns) and list what each measured alone")
    ap.add_argument("--sampling-floor", action="store_true",
                    help="print the error of a multinomial sample of n records drawn from "
                         "Adult's own 3-way marginals, on each fraction's W' by number of "
                         "public columns (what independent draws add even to a perfect model)")
    ap.add_argument("--one", nargs=4, metavar=("FRACTION", "MECHANISM", "EPSILON", "SEED"),
                    help=argparse.SUPPRESS)  # one run in this process (used internally)
    ap.add_argument("--also", nargs="*", type=float, default=[],
                    help=argparse.SUPPRESS)  # with --one, plain AIM: rows for these fractions too
    args = ap.parse_args()
    merged = [args.results]
    if args.summary:
        return summary(merged, args.score)
    if args.findings:
        import paper_findings
        for f in paper_findings.findings("vertical-adult", figure_rows(merged, SCORES[args.score])):
            emit(bench="vertical-finding", scored_on=args.score, **f)
        return
    if args.figure:
        return figure(merged)
    if args.missing:
        for entry in missing_runs(read_rows(*merged), args.fractions, args.mechanisms,
                                  args.epsilons, args.seeds):
            emit(bench="vertical-missing", **entry)
        return
    if args.markdown:
        return markdown(merged, args.score)
    if args.compare_traces:
        return compare_traces(args.compare_traces, args.fractions[0])
    if args.sampling_floor:
        return sampling_floor(args.fractions, args.seeds)
    require_shared()
    if args.one:
        frac, label, eps, seed = args.one
        for row in run_one(float(frac), label, float(eps), int(seed), args.condition_max_mb,
                           args.rho_scale, args.fit_iters, tuple(args.also), args.trace,
                           args.rounds, args.curator_trace):
            emit(**row)
        return
    args.results.parent.mkdir(parents=True, exist_ok=True)
    done = done_keys(args.results)
    for seed in args.seeds:
        for frac in args.fractions:
            for eps in args.epsilons:
                for label in args.mechanisms:
                    stored = stored_label(label, args.rho_scale, args.fit_iters, args.rounds)
                    if (frac, stored, eps, seed) in done:
                        continue
                    cmd = [sys.executable, __file__, "--one", str(frac), label, str(eps), str(seed),
                           "--rho-scale", str(args.rho_scale)]
                    if args.fit_iters is not None:
                        cmd += ["--fit-iters", str(args.fit_iters)]
                    if args.condition_max_mb is not None:
                        cmd += ["--condition-max-mb", str(args.condition_max_mb)]
                    if args.trace is not None:
                        cmd += ["--trace", str(args.trace)]
                    if args.rounds is not None:
                        cmd += ["--rounds", str(args.rounds)]
                    if args.curator_trace is not None:
                        cmd += ["--curator-trace", str(args.curator_trace)]
                    also = [] if uses_public_columns(label) else \
                        [f for f in args.fractions if f != frac and (f, stored, eps, seed) not in done]
                    if also:
                        cmd += ["--also", *map(str, also)]
                    out = subprocess.run(cmd, capture_output=True, text=True)
                    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
                    if out.returncode != 0 or not lines:
                        emit(bench="vertical", public_fraction=frac, mechanism=stored,
                             epsilon=eps, seed=seed, failed=True, stderr=out.stderr[-2000:])
                        continue
                    with args.results.open("a") as fh:
                        for line in lines:
                            print(line, flush=True)
                            fh.write(line + "\n")
                            done.add(key(json.loads(line)))


if __name__ == "__main__":
    main()
