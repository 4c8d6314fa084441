"""The model-size filter (synth_core.size_filter) gives exactly the verdicts of the
uncached question ``model_size_mb(sizes, model + [clique]) <= limit``: on random
models, and over the sequence of models of a real run (the wide-table AIM run's
measured cliques, round by round, with the component cache carried across rounds)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

from synth_core.engine import Candidate
from synth_core.model import model_size_mb
from synth_core.size_filter import ModelGraph, component_cells, size_filter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import wide_table  # noqa: E402

AIM_EVENTS = ROOT / "benchmarks" / "results" / "wide_table" / "aim_events.jsonl"
#: limits (MB) that split the wide table's candidates into kept and rejected
LIMITS = (0.05, 0.5, 2.0, 8.0, 80.0)


def uncached(sizes, model, candidates, limit):
    """The filter's definition: every candidate not inside a measured clique is
    kept iff the junction tree of the model plus it stays within ``limit``."""
    covered = [set(cl) for cl in model]
    return [c for c in candidates
            if any(set(c.clique) <= s for s in covered)
            or model_size_mb(sizes, [*model, c.clique]) <= limit]


def random_model(rng, sizes, cliques):
    names = list(sizes)
    out = []
    for _ in range(cliques):
        k = int(rng.integers(1, min(3, len(names)) + 1))
        out.append(tuple(str(c) for c in rng.choice(names, size=k, replace=False)))
    return out


def test_size_with_one_clique_equals_model_size_on_random_models():
    rng = np.random.default_rng(7)
    checked = 0
    for trial in range(150):
        ncols = int(rng.integers(1, 9))
        sizes = {f"x{i}": int(rng.integers(1, 12)) for i in range(ncols)}
        model = random_model(rng, sizes, int(rng.integers(0, 6)))
        graph = ModelGraph(sizes, model)
        for clique in random_model(rng, sizes, 6):
            assert graph.size_with_mb(clique) == model_size_mb(sizes, [*model, clique]), \
                (sizes, model, clique)
            checked += 1
    assert checked == 900


def test_a_spanning_tree_is_sized_by_its_edges():
    # a path a-b-c-d: the tree rule (edges' cells), not the elimination cliques
    sizes = {"a": 3, "b": 50, "c": 4, "d": 60}
    model = [("a", "b"), ("b", "c")]
    expect = (3 * 50 + 50 * 4 + 4 * 60) * 8 / 2 ** 20
    assert ModelGraph(sizes, model).size_with_mb(("c", "d")) == expect
    assert model_size_mb(sizes, [*model, ("c", "d")]) == expect


def test_filter_keeps_what_the_limit_allows_on_random_models():
    rng = np.random.default_rng(11)
    sizes = {f"x{i}": int(rng.integers(2, 40)) for i in range(8)}
    pool = [Candidate(cl) for k in (1, 2, 3) for cl in itertools.combinations(sizes, k)]
    for _ in range(12):
        model = random_model(rng, sizes, int(rng.integers(0, 5)))
        for limit in (0.001, 0.01, 0.1):
            got = size_filter(sizes, model, pool, limit)
            assert got == uncached(sizes, model, pool, limit)


def wide_run_models():
    """(column sizes, the model's cliques after each round) of the committed wide-table
    AIM run (eps 1, all-3way): round 0's one-way marginals, then one clique a round."""
    return wide_table.column_sizes(0), wide_table.run_models(AIM_EVENTS)


def check_run(step: int) -> int:
    """Every ``step``-th model of the run: the filter's verdicts (cache carried across
    the rounds) equal the uncached ones for all 3-way candidates and several limits;
    the number of verdicts compared."""
    sizes, models = wide_run_models()
    pool = [Candidate(cl) for cl in itertools.combinations(sizes, 3)]
    component_cells.cache_clear()
    compared = 0
    for model in models[::step]:
        exact = {c.clique: model_size_mb(sizes, [*model, c.clique]) for c in pool}
        covered = [set(cl) for cl in model]
        for limit in LIMITS:
            got = size_filter(sizes, model, pool, limit)
            want = [c for c in pool if any(set(c.clique) <= s for s in covered)
                    or exact[c.clique] <= limit]
            assert got == want, (len(model), limit)
            compared += len(pool)
    hits = component_cells.cache_info().hits
    assert hits > 0, "the cache was never used across rounds"
    return compared


def test_verdicts_over_a_real_runs_models_equal_the_uncached_ones():
    sizes, models = wide_run_models()
    assert len(models) >= 40 and len(sizes) == 22
    assert check_run(step=16) == len(models[::16]) * len(LIMITS) * 1540


@pytest.mark.slow
def test_verdicts_over_every_model_of_the_real_run():
    assert check_run(step=1) > 0


def test_a_candidate_larger_than_the_limit_alone_is_rejected():
    sizes = {"a": 1000, "b": 1000, "c": 2}
    # 2,000,000 cells = 15.26 MB on its own, whatever the model
    assert size_filter(sizes, [], [Candidate(("a", "b", "c"))], 15.0) == []
    assert size_filter(sizes, [], [Candidate(("a", "b", "c"))], 15.3) == [Candidate(("a", "b", "c"))]
