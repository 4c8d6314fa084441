"""vPMW and vGEM-Pub (public columns, seed 002): exact budget, reproducibility,
error against epsilon, vPMW's initial distribution, vGEM-Pub's pre-training on
the public columns, and clear errors for bad column choices."""

from __future__ import annotations

import numpy as np
import pytest

from synth_core import Synthesizer
from synth_core.errors import ConfigError, SchemaError
from synth_core.mechanisms.gem import GEM_ALPHA

WORKLOAD = "all-2way"
PUBLIC = ["sex", "age", "edu"]
#: small GEM networks for speed: the defaults (512, (1024, 1024), 1000) are the papers'
TINY_GEM = dict(hidden=(32, 32), noise_dim=16, batch=200, inner_steps=10, threads=1,
                pretrain_max_steps=30)


def run(mech, private, schema, public_columns=PUBLIC, **kw):
    synth = Synthesizer(mech, workload=kw.pop("workload", WORKLOAD), **kw)
    events = list(synth.run(private, None, schema=schema, public_columns=public_columns))
    return synth, events


def assert_exact_total(ledger):
    assert ledger.spent == pytest.approx(ledger.total, rel=1e-12)
    running = 0.0
    for c in ledger.charges:
        running += c.rho
        assert running <= ledger.total * (1 + 1e-12)


def test_vpmw_spends_exactly_its_budget_and_starts_from_the_public_columns(small_private,
                                                                          small_schema):
    T = 20
    synth, events = run("vpmw", small_private, small_schema, epsilon=1.0, rounds=T, seed=0,
                        support_size=6000)
    ledger = synth.result.ledger
    assert_exact_total(ledger)
    rho = ledger.total
    charges = ledger.charges
    assert len(charges) == 2 * T
    for c in charges[:-1]:  # eps0^2 / 2 each, eps0 = sqrt(rho / T)
        assert c.rho == pytest.approx(rho / (2 * T), rel=1e-12)
    assert events[0].round == 0 and events[0].rho_round == 0
    mech = synth.engine.mechanism
    # 2 copies of every record: its public values, uniform private values
    n = len(small_private)
    assert len(mech.support) == 2 * n
    data = synth.result.inputs.data
    for c in PUBLIC:  # the initial marginals on the public columns are the table's own
        size = data.sizes[c]
        init = np.bincount(mech.support[c], weights=mech.initial, minlength=size)
        exact = np.bincount(data.private.to_frame()[c], minlength=size) / n
        assert np.allclose(init, exact)
    # no selected query lies inside the public columns
    for e in events[1:]:
        assert not set(e.cliques[0]) <= set(PUBLIC)
    # synthetic records come from the support
    keys = set(map(tuple, mech.support.to_numpy()))
    out = synth.result.synthetic_codes[list(mech.support.columns)]
    assert set(map(tuple, out.to_numpy())) <= keys


def test_vpmw_is_reproducible_and_learns(small_private, small_schema):
    a, ea = run("vpmw", small_private, small_schema, epsilon=1.0, rounds=10, seed=4,
                support_size=6000)
    b, eb = run("vpmw", small_private, small_schema, epsilon=1.0, rounds=10, seed=4,
                support_size=6000)
    assert [e.note for e in ea] == [e.note for e in eb]
    assert a.result.synthetic.equals(b.result.synthetic)
    errs = {}
    for eps in (0.05, 20.0):
        s, _ = run("vpmw", small_private, small_schema, epsilon=eps, rounds=100, seed=0,
                   support_size=6000)
        errs[eps] = s.result.curator_diagnostics().workload_error
    assert errs[20.0] < errs[0.05]


def test_vgem_pub_budget_pretraining_and_reproducibility(small_private, small_schema):
    T = 4
    synth, events = run("vgem-pub", small_private, small_schema, epsilon=1.0, rounds=T, seed=0,
                        **TINY_GEM)
    ledger = synth.result.ledger
    assert_exact_total(ledger)
    rho, a = ledger.total, GEM_ALPHA
    eps0_sq = 2 * rho / (T * (a ** 2 + (1 - a) ** 2))
    select = [c for c in ledger.charges if c.step == "select"]
    measure = [c for c in ledger.charges if c.step == "measure"]
    assert len(select) == len(measure) == T
    assert select[0].rho == pytest.approx(a ** 2 * eps0_sq / 2, rel=1e-12)
    assert measure[0].rho == pytest.approx((1 - a) ** 2 * eps0_sq / 2, rel=1e-12)
    # pre-training on the public columns' marginals only (the all-2way pairs inside them)
    rep = synth.engine.mechanism.pretrain_report
    assert rep["marginals"] == 3
    assert rep["after"]["workload_error"] < rep["before"]["workload_error"]
    assert rep["after"]["max_error"] < rep["before"]["max_error"]
    assert events[0].round == 0 and events[0].source == "public" and events[0].rho_round == 0
    for e in events[1:]:
        assert not set(e.cliques[0]) <= set(PUBLIC)
    again, events2 = run("vgem-pub", small_private, small_schema, epsilon=1.0, rounds=T, seed=0,
                         **TINY_GEM)
    assert [e.note for e in events2] == [e.note for e in events]
    assert again.result.synthetic.equals(synth.result.synthetic)


def test_vgem_pub_error_falls_with_epsilon(small_private, small_schema):
    errs = {}
    for eps in (0.05, 50.0):
        s, _ = run("vgem-pub", small_private, small_schema, epsilon=eps, rounds=15, seed=0,
                   **TINY_GEM)
        errs[eps] = s.result.curator_diagnostics().workload_error
    assert errs[50.0] < errs[0.05]


@pytest.mark.parametrize("mech,kw", [("vpmw", dict(rounds=2)),
                                     ("vgem-pub", dict(rounds=2, **TINY_GEM))])
def test_bad_public_columns_are_clear_errors(small_private, small_schema, mech, kw):
    with pytest.raises(ConfigError, match="needs public columns"):
        run(mech, small_private, small_schema, public_columns=(), epsilon=1.0, seed=0, **kw)
    with pytest.raises((ConfigError, SchemaError), match="colour"):
        run(mech, small_private, small_schema, public_columns=["sex", "colour"], epsilon=1.0,
            seed=0, **kw)
    with pytest.raises(ConfigError, match="every column is marked public"):
        run(mech, small_private, small_schema,
            public_columns=["sex", "age", "edu", "income", "hours"], epsilon=1.0, seed=0, **kw)
    with pytest.raises(ConfigError, match="bounded"):
        run(mech, small_private, small_schema, epsilon=1.0, seed=0, neighbours="unbounded", **kw)


def test_vgem_pub_pretraining_cache_reads_only_the_public_columns(small_private, small_schema,
                                                                  tmp_path, monkeypatch):
    """vGEM-Pub's pre-training fits the public columns' marginals: with the cache on, a
    run on a table whose *private* columns differ loads it (nothing private is in the
    entry or its key), a table whose public columns differ misses, and a cached run's
    output is byte-identical to an uncached one."""
    from synth_core.mechanisms.pretrain_cache import PRETRAIN_CACHE_ENV

    kw = dict(epsilon=1.0, rounds=2, seed=0, **TINY_GEM)
    plain, plain_events = run("vgem-pub", small_private, small_schema, **kw)
    monkeypatch.setenv(PRETRAIN_CACHE_ENV, str(tmp_path / "cache"))
    run("vgem-pub", small_private, small_schema, **kw)
    cached, cached_events = run("vgem-pub", small_private, small_schema, **kw)
    assert cached.engine.mechanism.pretrain_cache_hit
    assert cached.result.synthetic.equals(plain.result.synthetic)
    assert [e.note for e in cached_events] == [e.note for e in plain_events]
    private_cols = [c for c in small_private.columns if c not in PUBLIC]
    other_private = small_private.copy()
    other_private[private_cols] = other_private[private_cols].sample(
        frac=1.0, random_state=1).to_numpy()
    shuffled, _ = run("vgem-pub", other_private, small_schema, **kw)
    assert shuffled.engine.mechanism.pretrain_cache_hit
    other_public = small_private.copy()
    other_public["age"] = other_public["age"].sample(frac=1.0, random_state=2).to_numpy()
    other_public["sex"] = other_public["sex"].sample(frac=1.0, random_state=3).to_numpy()
    moved, _ = run("vgem-pub", other_public, small_schema, **kw)
    assert not moved.engine.mechanism.pretrain_cache_hit
