"""A privacy budget per dataset (synth_core.budget, the workbench's account)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest

from synth_core import Synthesizer, load_sample, synthesize
from synth_core.budget import BudgetAccount, legacy_table_fingerprint, table_fingerprint
from synth_core.errors import BudgetExceededError, ConfigError
from synth_core.privacy import Guarantee, cdp_epsilon, rho_from_epsilon_delta
from synth_core.report import CURATOR_ONLY_KEYS, check_release
from synth_core.workbench import Workbench
from synth_core.workbench.budget import budget_path

ROOT = Path(__file__).resolve().parent.parent
FAST = dict(rounds=2, fit_iters=10, final_fit_iters=20, seed=0)
#: AIM needs at least one round per column (its 1-way initialisation)
AIM_FAST = dict(FAST, rounds=8)
BOUNDED = Guarantee("bounded")


def account(tmp_path, total=1.0, name="acct.json", fingerprint="f" * 64) -> BudgetAccount:
    return BudgetAccount.create(tmp_path / name, label="titanic", fingerprint=fingerprint,
                                total_rho=total)


def test_reserve_refuses_at_the_cap_and_says_what_is_left(tmp_path):
    acc = account(tmp_path, total=1.0)
    a = acc.reserve(0.4, "run A", guarantee=BOUNDED)
    acc.settle(a, 0.25, finished=True)                # the unspent 0.15 returns
    b = acc.reserve(0.5, "run B", guarantee=BOUNDED)                     # open: counts as reserved
    assert acc.spent == pytest.approx(0.75) and acc.remaining == pytest.approx(0.25)
    with pytest.raises(BudgetExceededError) as exc:
        acc.reserve(0.3, "run C", guarantee=BOUNDED)
    assert "rho = 0.25 of 1" in str(exc.value) and "run C" in str(exc.value)
    assert len(acc.history()) == 2                    # nothing recorded on a refusal
    acc.reserve(0.25, "run D", guarantee=BOUNDED)                        # exactly the rest fits
    with pytest.raises(ConfigError):
        acc.settle(b, 0.6, finished=True)             # never more than reserved
    acc.settle(b, 0.5, finished=True)
    with pytest.raises(ConfigError):
        acc.settle(b, 0.5, finished=True)             # settled once


def test_total_in_epsilon_delta_is_the_exact_conversion(tmp_path):
    acc = BudgetAccount.create(tmp_path / "a.json", label="x", fingerprint="0", epsilon=2.0,
                               delta=1e-6)
    assert acc.total_rho == rho_from_epsilon_delta(2.0, 1e-6)
    with pytest.raises(ConfigError):
        BudgetAccount.create(tmp_path / "a.json", label="x", fingerprint="0", total_rho=5.0)
    assert BudgetAccount.open(tmp_path / "a.json").total_rho == acc.total_rho   # not replaced


def test_the_account_survives_a_restart_in_another_process(tmp_path):
    acc = account(tmp_path, total=1.0)
    acc.settle(acc.reserve(0.6, "run A", mechanism="aim", guarantee=BOUNDED), 0.6, finished=True)
    script = ("import sys; from synth_core.budget import BudgetAccount\n"
              "from synth_core.privacy import Guarantee\n"
              "a = BudgetAccount.open(sys.argv[1])\n"
              "try:\n    a.reserve(0.5, 'too much', guarantee=Guarantee('bounded'))\nexcept Exception as e:\n"
              "    print(type(e).__name__)\n"
              "a.reserve(0.3, 'fits', guarantee=Guarantee('bounded'))\nprint(round(a.spent, 9))\n")
    out = subprocess.run([sys.executable, "-c", script, str(acc.path)], capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["BudgetExceededError", "0.9"]
    again = BudgetAccount.open(acc.path)
    assert again.spent == pytest.approx(0.9)
    assert [c.what for c in again.charges] == ["run A", "fits"]
    assert again.charges[0].mechanism == "aim" and again.charges[1].rho_spent is None


def test_concurrent_reservations_cannot_pass_the_cap(tmp_path):
    acc = account(tmp_path, total=1.0)
    wins, losses = [], []

    def grab():
        mine = BudgetAccount.open(acc.path)           # each session opens its own handle
        for _ in range(10):
            try:
                wins.append(mine.reserve(0.1, "thread", guarantee=BOUNDED))
            except BudgetExceededError:
                losses.append(1)

    threads = [threading.Thread(target=grab) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 10 and len(losses) == 30
    assert BudgetAccount.open(acc.path).spent == pytest.approx(1.0)


@pytest.mark.slow
def test_concurrent_processes_cannot_pass_the_cap(tmp_path):
    acc = account(tmp_path, total=1.0)
    script = ("import sys; from synth_core.budget import BudgetAccount\n"
              "from synth_core.privacy import Guarantee\n"
              "from synth_core.errors import BudgetExceededError\n"
              "a = BudgetAccount.open(sys.argv[1]); n = 0\n"
              "for _ in range(15):\n    try:\n        a.reserve(0.1, 'p', guarantee=Guarantee('bounded')); n += 1\n"
              "    except BudgetExceededError:\n        pass\nprint(n)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(acc.path)], env=env,
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    counts = [int(p.communicate(timeout=120)[0]) for p in procs]
    assert sum(counts) == 10
    assert BudgetAccount.open(acc.path).spent == pytest.approx(1.0)


def test_fingerprint_is_the_tables_records_however_they_are_written(tmp_path):
    from synth_core.tables import load_table
    df = load_sample("titanic").private
    first = table_fingerprint(df)
    assert table_fingerprint(df.copy()) == first
    # the same records, re-exported: rows sorted, columns reordered, whole numbers as 1.0
    shuffled = df.sample(frac=1.0, random_state=3)[list(reversed(df.columns))]
    assert table_fingerprint(shuffled) == first
    numbers = df.select_dtypes("number").columns
    assert len(numbers) and table_fingerprint(df.astype({c: "float64" for c in numbers})) == first
    df.sort_values(list(df.columns)).to_csv(tmp_path / "sorted.csv", index=False)
    df.to_csv(tmp_path / "as-is.csv", index=False)
    assert table_fingerprint(load_table(tmp_path / "sorted.csv")) == \
        table_fingerprint(load_table(tmp_path / "as-is.csv"))
    # other records
    changed = df.copy()
    changed.iloc[0, 0] = changed.iloc[1, 0] if changed.iloc[0, 0] != changed.iloc[1, 0] else None
    assert table_fingerprint(changed) != first
    assert table_fingerprint(pd.concat([df, df.iloc[:1]])) != first        # one record twice
    assert table_fingerprint(df.iloc[1:]) != first
    assert table_fingerprint(df.rename(columns={df.columns[0]: "other"})) != first
    swapped = df.copy()                       # the same values in two columns' places
    a, b = numbers[:2]
    swapped[[a, b]] = swapped[[b, a]].to_numpy()
    assert table_fingerprint(swapped) != first


def test_an_account_made_under_the_old_fingerprint_is_re_keyed_and_keeps_its_history(tmp_path):
    """Accounts made before fingerprints ignored row order are found, moved to their
    new name and charged, not orphaned (which would give the table a fresh total)."""
    from synth_core.budget import legacy_table_fingerprint
    from synth_core.workbench.budget import BudgetService, run_account
    df = load_sample("titanic").private
    old = legacy_table_fingerprint(df)
    assert old != table_fingerprint(df)
    acc = BudgetAccount.create(budget_path(old), label="titanic", fingerprint=old,
                               fingerprint_of="table content", epsilon=3.0, delta=1e-9)
    acc.record_spent(0.25, "an earlier run", guarantee=BOUNDED)
    assert run_account(df.iloc[::-1], label="titanic") is None  # the old key is row order's
    found = run_account(df, label="titanic")
    assert found is not None and found.spent == pytest.approx(0.25)
    assert run_account(df.iloc[::-1], label="titanic").path == found.path   # from now on
    assert found.path == budget_path(table_fingerprint(df)) and not budget_path(old).exists()
    assert BudgetService.account(table_fingerprint(df)).history()[0]["what"] == "an earlier run"
    # a --budget-file account is re-keyed where it is
    own = BudgetAccount.create(tmp_path / "own.json", label="t", fingerprint=old,
                               fingerprint_of="table content", epsilon=3.0, delta=1e-9)
    own.record_spent(0.5, "before", guarantee=BOUNDED)
    found.path.unlink()                                        # no workbench account now
    opened = run_account(df, budget_file=own.path, label="t")
    assert opened.path == own.path and opened.spent == pytest.approx(0.5)
    assert BudgetAccount.open(own.path).fingerprint == table_fingerprint(df)


@pytest.mark.parametrize("field,value", [
    ("total_rho", float("nan")),          # every comparison with NaN is False: the cap fails open
    ("total_rho", "lots"), ("total_rho", -1.0), ("total_rho", True),
    ("charges", "none"), ("charges", [{"run_id": "x"}]),
    ("charges", [{"run_id": "x", "mechanism": "aim", "what": "w", "rho_reserved": float("nan")}]),
    ("charges", [{"run_id": "x", "mechanism": "aim", "what": "w", "rho_reserved": 0.1,
                  "rho_spent": -0.5}]),
    ("label", None), ("cap", "lots"), ("cap", {"epsilon": "3", "delta": 1e-9}),
])
def test_a_damaged_account_is_refused_and_says_to_restore_it(tmp_path, capsys, field, value):
    from synth_core.cli import main
    acc = account(tmp_path, total=rho_from_epsilon_delta(3.0, 1e-9))
    state = json.loads(acc.path.read_text())
    state[field] = value
    acc.path.write_text(json.dumps(state))          # Python's json writes NaN as it reads it
    with pytest.raises(ConfigError, match="damaged") as err:
        BudgetAccount.open(acc.path)
    assert "Restore the file from a backup" in str(err.value)
    code = main(["run", "--sample", "titanic", "--mechanism", "mwem-pgm", "--epsilon", "1000",
                 "--rounds", "2", "--quiet", "--budget-file", str(acc.path),
                 "--out", str(tmp_path / "s.csv")])
    captured = capsys.readouterr()
    assert code == 2 and "damaged" in captured.err and "Traceback" not in captured.err
    assert not (tmp_path / "s.csv").exists()


def test_a_total_with_an_implausible_delta_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="the total's delta = 0.5 is above 0.001"):
        BudgetAccount.create(tmp_path / "a.json", label="t", fingerprint="f", epsilon=3.0,
                             delta=0.5)
    assert not (tmp_path / "a.json").exists()


def test_the_api_charges_only_the_tables_own_account_and_refuses_before_measuring(tmp_path):
    """An account given for another table would be charged while the run's own table
    keeps its whole total: the API checks the account against the table it reads."""
    s = load_sample("titanic")
    acc = BudgetAccount.create(tmp_path / "t.json", label="titanic",
                               fingerprint=table_fingerprint(s.private), epsilon=1.0, delta=1e-9)
    with pytest.raises(BudgetExceededError):
        list(Synthesizer("aim", epsilon=2.0, **AIM_FAST).run(s.private, schema=s.schema,
                                                             budget=acc))
    with pytest.raises(ConfigError, match="belongs to another table"):
        list(Synthesizer("aim", epsilon=0.5, **AIM_FAST).run(s.public, schema=s.schema, budget=acc))
    s.private.to_csv(tmp_path / "private.csv", index=False)   # the same table as a file
    assert synthesize(tmp_path / "private.csv", schema=s.schema, mechanism="mwem-pgm",
                      epsilon=0.5, budget=acc, **FAST).report["budget_account"]
    with pytest.raises(ConfigError, match="budget must be a BudgetAccount") as err:
        list(Synthesizer("aim", epsilon=0.5, **AIM_FAST).run(s.private, budget=str(acc.path)))
    assert "BudgetAccount.open" in err.value.hint
    assert [h["mechanism"] for h in acc.history()] == ["mwem-pgm"]
    # an account made under the fingerprint of older versions is the table's, re-keyed
    legacy = BudgetAccount.create(tmp_path / "old.json", label="titanic", epsilon=1.0,
                                  delta=1e-9, fingerprint=legacy_table_fingerprint(s.private))
    synthesize(s.private, schema=s.schema, mechanism="mwem-pgm", epsilon=0.5, budget=legacy,
               **FAST)
    assert BudgetAccount.open(tmp_path / "old.json").fingerprint == acc.fingerprint


def test_two_runs_of_one_synthesizer_are_each_charged_their_own_spend(tmp_path):
    """A charge settled from the Synthesizer's latest engine: run 1 left paused
    (a notebook loop interrupted), run 2 started on the same Synthesizer, then
    run 1 closed was charged run 2's spend so far, and the total could be passed."""
    s = load_sample("titanic")
    acc = BudgetAccount.create(tmp_path / "t.json", label="titanic",
                               fingerprint=table_fingerprint(s.private), epsilon=3.0, delta=1e-9)
    synth = Synthesizer("mwem-pgm", epsilon=1.0, **dict(FAST, rounds=3))
    first = synth.run(s.private, schema=s.schema, budget=acc)
    next(first), next(first)                     # two rounds measured, then left paused
    first_engine = synth.engine
    second = synth.run(s.private, schema=s.schema, budget=acc)
    next(second)                                 # one round of the second run
    assert synth.engine is not first_engine
    first.close()
    assert 0 < synth.engine.ledger.spent < first_engine.ledger.spent
    assert acc.history()[0]["rho_spent"] == pytest.approx(first_engine.ledger.spent, rel=1e-12)
    list(second)
    assert acc.history()[1]["rho_spent"] == pytest.approx(synth.engine.ledger.spent, rel=1e-12)
    assert acc.spent == pytest.approx(first_engine.ledger.spent + synth.engine.ledger.spent)
    assert synth.result.report["budget_account"]["this_run_rho"] == \
        pytest.approx(synth.engine.ledger.spent)


def test_the_report_carries_the_account_and_no_fingerprint(tmp_path):
    s = load_sample("titanic")
    acc = BudgetAccount.create(tmp_path / "t.json", label="titanic survey",
                               fingerprint=table_fingerprint(s.private), epsilon=3.0, delta=1e-9)
    first = synthesize(s.private, s.public, schema=s.schema, mechanism="jam-pgm", epsilon=1.0,
                       budget=acc, **FAST)
    second = synthesize(s.private, s.public, schema=s.schema, mechanism="mwem-pgm", epsilon=0.5,
                        budget=acc, **FAST)
    block = second.report["budget_account"]
    check_release(block)
    assert block["label"] == "titanic survey" and block["total_rho"] == acc.total_rho
    assert block["spent_before_rho"] == pytest.approx(first.ledger.spent)
    assert block["this_run_rho"] == pytest.approx(second.ledger.spent)
    assert block["remaining_rho"] == pytest.approx(acc.total_rho - first.ledger.spent
                                                   - second.ledger.spent)
    assert [h["mechanism"] for h in block["history"]] == ["jam-pgm", "mwem-pgm"]
    # no times: with the report's creation time they would give the run's duration
    assert all("time" not in h for h in block["history"]) and acc.charges[1].time
    assert acc.fingerprint not in json.dumps(second.report)
    assert not CURATOR_ONLY_KEYS & set(block)
    assert acc.spent == pytest.approx(first.ledger.spent + second.ledger.spent)


def test_a_run_refused_for_its_data_leaves_no_trace_in_later_releases(tmp_path, capsys):
    """helper-60: a run refused because the private values did not fit the domain was
    reserved, settled at 0 and listed in every later release's history, a fact about
    the private table published without noise."""
    from synth_core.cli import main
    files = _titanic_files(tmp_path)
    acct = tmp_path / "a.json"
    run = ["run", "--mechanism", "mwem-pgm", "--rounds", "2", "--epsilon", "0.5", "--fit-iters",
           "10", "--final-fit-iters", "20", "--quiet", "--budget-file", str(acct),
           "--report", str(tmp_path / "r.json"), "--out", str(tmp_path / "s.csv")]
    assert main([*run, *files, "--budget-total-epsilon", "3"]) == 0
    # no schema: the domain read off the 301 public rows misses private values
    assert main([*run, *files[:4]]) == 2
    assert "not in the schema" in capsys.readouterr().err
    assert len(BudgetAccount.open(acct).charges) == 1
    # and a run that failed before measuring anything is left out of later histories
    account = BudgetAccount.open(acct)
    account.settle(account.reserve(0.01, "failed", guarantee=BOUNDED), 0.0, finished=False)
    assert main([*run, *files]) == 0
    history = json.loads((tmp_path / "r.json").read_text())["budget_account"]["history"]
    assert [h["rho_spent"] > 0 for h in history] == [True, True]


def test_a_stopped_run_returns_its_unspent_reservation(tmp_path):
    s = load_sample("titanic")
    acc = account(tmp_path, total=10.0, fingerprint=table_fingerprint(s.private))
    synth = Synthesizer("jam-pgm", epsilon=1.0, rounds=5, fit_iters=10, final_fit_iters=20, seed=0)
    gen = synth.run(s.private, s.public, schema=s.schema, budget=acc)
    next(gen)
    next(gen)
    gen.close()
    (charge,) = acc.charges
    assert charge.rho_spent == pytest.approx(synth.engine.ledger.spent)
    assert 0 < charge.rho_spent < charge.rho_reserved


# ---------------------------------------------------------------- the workbench


@pytest.fixture
def wb(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNTH_WORKBENCH_OUT", str(tmp_path))
    w = Workbench()
    w.load_sample("titanic")
    w.update_settings(**FAST)
    return w


def test_a_workbench_run_is_charged_and_refused_at_the_cap(wb, tmp_path):
    assert wb.dataset_budget() is None
    wb.set_dataset_budget(1.0, 1e-9, label="titanic")
    wb.start_run()                                    # eps 1 of 1: reserved before it starts
    assert wb.dataset_budget().charges[0].rho_spent is None or wb.worker.done
    assert wb.worker.wait(120)
    run = wb.collect()
    assert run.ok, run.failure
    assert run.rho_spent > 0
    acc = wb.dataset_budget()
    assert acc.spent == pytest.approx(run.rho_spent) and acc.charges[0].rho_spent is not None
    assert run.result.report["budget_account"]["this_run_rho"] == pytest.approx(run.rho_spent)
    with pytest.raises(BudgetExceededError) as exc:
        wb.start_run()                                # the first spent some of it: a second eps-1 run does not fit
    assert "left" in str(exc.value) and wb.worker is None
    # another session (or a restart) on the same table finds the same account
    other = Workbench()
    other.load_sample("titanic")
    assert other.dataset_budget().spent == pytest.approx(acc.spent)
    assert (tmp_path / "budgets").is_dir()


def test_runs_before_the_total_was_set_are_counted_in_it(wb):
    wb.start_run()                                    # no account yet: nothing reserved
    assert wb.worker.wait(120)
    run = wb.collect()
    assert run.ok, run.failure
    assert run.rho_spent > 0
    assert wb.table_spent() == (pytest.approx(run.rho_spent), "this session's runs")
    # a total those runs already used up is refused, and nothing is written
    used_up = cdp_epsilon(run.rho_spent, 1e-9)
    with pytest.raises(ConfigError, match="already spent") as exc:
        wb.set_dataset_budget(used_up * 0.99, 1e-9)
    assert "Set a larger total" in exc.value.hint and wb.dataset_budget() is None
    acc = wb.set_dataset_budget(1.0, 1e-9, label="titanic")
    assert acc.spent == pytest.approx(run.rho_spent)
    assert acc.charges[0].what == "runs in this session before the total was set"
    assert acc.remaining == pytest.approx(acc.total_rho - run.rho_spent)


def run_once(wb, **settings):
    wb.update_settings(**settings)
    wb.start_run()
    assert wb.worker.wait(120)
    run = wb.collect()
    assert run.ok, run.failure
    return run


def release_report(wb, run) -> dict:
    return json.loads(wb.release_files(run)["report.json"])


def test_a_release_chosen_among_runs_says_what_covers_it(wb):
    """A run's own statement covers it alone; its release also states the table's
    whole spend (the sum of every run on it, in zCDP), which covers it if it was
    chosen among them: absent while it is the table's only run, in the report and
    on the page once there are more, from the account once a total is set."""
    first = run_once(wb, epsilon=0.5, mechanism="mwem-pgm")    # spends its whole budget
    assert wb.release_selection(first) is None
    assert "release_selection" not in release_report(wb, first)
    second = run_once(wb, epsilon=0.25)
    block = release_report(wb, first)["release_selection"]   # written again at each call
    total = first.rho_spent + second.rho_spent
    assert block["table_rho_spent"] == pytest.approx(total)
    assert block["this_run_rho"] == pytest.approx(first.rho_spent)
    assert block["counted"] == "this session's runs"
    assert block["epsilon_if_chosen"] == pytest.approx(cdp_epsilon(total, 1e-9))
    assert block["epsilon_if_chosen"] > cdp_epsilon(first.rho_spent, 1e-9)
    assert f"{block['epsilon_if_chosen']:.3g}, 1e-09)-differential privacy" in block["statement"]
    assert release_report(wb, second)["release_selection"]["table_rho_spent"] == pytest.approx(total)
    # the account, once set, counts what came before it and what comes after
    wb.set_dataset_budget(5.0, 1e-9, label="titanic")
    third = run_once(wb, epsilon=0.25)
    block = release_report(wb, first)["release_selection"]
    assert block["table_rho_spent"] == pytest.approx(total + third.rho_spent)
    assert block["counted"] == "its budget account 'titanic'"
    # every repeat spends again: the script says so, the public-only baseline's does not
    assert "spends its budget again" in wb.release_files(first)["reproduce.sh"].decode()
    free = run_once(wb, mechanism="public-only", epsilon=10.0)   # spends nothing
    assert "spends its budget again" not in wb.release_files(free)["reproduce.sh"].decode()
    # the baseline's own statement claims nothing was spent: a choice among the table's
    # runs is covered only by their sum, whatever epsilon its settings name
    assert release_report(wb, free)["release_selection"]["epsilon_if_chosen"] > 0


def test_no_selection_block_when_the_runs_spent_less_than_this_runs_statement():
    """helper-62: a run's statement at its budget (epsilon 1) and, beside it, 'only
    (0.982, ...)' for the table's runs, which spent less than that budget in all."""
    from synth_core.workbench.runs import selection_block
    budget = rho_from_epsilon_delta(1.0, 1e-9)
    assert selection_block(0.6 * budget, 0.95 * budget, 1e-9, "x", (), BOUNDED,
                           stated_rho=budget) is None
    block = selection_block(0.6 * budget, 1.5 * budget, 1e-9, "x", (), BOUNDED,
                            stated_rho=budget)
    assert block["epsilon_if_chosen"] > 1.0
    # runs under other relations: said whatever the sums
    mixed = selection_block(0.6 * budget, 0.95 * budget, 1e-9, "x", {Guarantee("unbounded")},
                            BOUNDED, stated_rho=budget)
    assert mixed["epsilon_if_chosen"] is None


def test_a_comparison_is_charged_per_job(wb):
    wb.set_dataset_budget(3.0, 1e-9)
    with pytest.raises(BudgetExceededError):          # 2 x 2 runs at eps 2 do not fit
        wb.start_compare(["jam-pgm", "aim"], [2.0], 2)
    assert wb.dataset_budget().charges == []
    sweep = wb.start_compare(["jam-pgm", "public-only"], [0.5], 1)
    assert sweep.wait(180)
    acc = wb.dataset_budget()
    assert len(acc.charges) == 2 and all(c.what.startswith("compare:") for c in acc.charges)
    assert {c.mechanism for c in acc.charges} == {"jam-pgm", "public-only"}
    assert acc.spent == pytest.approx(wb.compare.rho)


def test_a_what_if_preview_is_free(wb):
    wb.set_dataset_budget(1.0, 1e-9)
    worker = wb.start_what_if(["jam-pgm"], [0.1, 1.0], seeds=1)
    assert worker.wait(180) and worker.status == "finished"
    assert wb.dataset_budget().charges == [] and wb.dataset_budget().spent == 0.0


def test_the_data_page_sets_the_total_and_the_run_page_refuses_past_it(tmp_path, monkeypatch):
    from test_app_pages import errors, go, load_titanic, new_app, sidebar_text
    monkeypatch.setenv("SYNTH_WORKBENCH_OUT", str(tmp_path))
    at = go(load_titanic(new_app()), "app_pages/data.py")
    assert "Table's total budget:** not set" in sidebar_text(at)
    set_total = lambda: at.button[[b.label for b in at.button].index(  # noqa: E731
        "Set total budget")].click().run()
    set_total()                                  # no total is proposed
    assert errors(at) == ["Type the table's total ε first."]
    at.number_input(key="budget_eps").set_value(0.5)
    set_total()                                  # set for good only once the box is ticked
    assert errors(at) == ["Tick the box to set ε = 0.5 at δ = 1e-09 as this table's total "
                          "for good."]
    wb = at.session_state["wb"]
    assert wb.dataset_budget() is None
    at.checkbox(key="budget_sure").check()
    set_total()
    assert not at.exception and not errors(at)
    assert wb.dataset_budget().total_rho == rho_from_epsilon_delta(0.5, wb.settings.delta)
    assert "0 of" in sidebar_text(at) and "left" in sidebar_text(at)
    wb.update_settings(epsilon=1.0, **FAST)            # one run at eps 1 passes a total of 0.5
    go(at, "app_pages/run.py")                          # said before Start, Start disabled
    assert any("Refused" in w.value and "left" in w.value for w in at.warning)
    assert at.button(key="start_run").disabled
    with pytest.raises(BudgetExceededError, match="left"):   # and refused if started anyway
        wb.start_run()
    assert wb.worker is None and errors(at) == []


def test_the_cli_charges_a_budget_file_and_refuses_past_it(tmp_path, capsys):
    from synth_core.cli import main
    acct = tmp_path / "titanic-budget.json"
    args = ["run", "--sample", "titanic", "--mechanism", "jam-pgm", "--rounds", "2",
            "--fit-iters", "10", "--final-fit-iters", "20", "--seed", "0", "--quiet",
            "--budget-file", str(acct), "--out", str(tmp_path / "s.csv"),
            "--report", str(tmp_path / "r.json")]
    assert main(args + ["--epsilon", "0.5"]) == 2              # no account, no total given
    assert "--budget-total-epsilon" in capsys.readouterr().err and not acct.exists()
    assert main(args + ["--epsilon", "1", "--budget-total-epsilon", "1.2"]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    spent = report["privacy"]["rho_spent"]
    assert report["budget_account"]["this_run_rho"] == pytest.approx(spent)
    left = rho_from_epsilon_delta(1.2, 1e-9) - spent
    assert main(args + ["--epsilon", "2"]) == 2                # rho(2) > what is left
    err = capsys.readouterr().err
    assert "Refused" in err and f"{left:.6g}" in err
    assert BudgetAccount.open(acct).spent == pytest.approx(spent)


def test_an_aim_run_with_fewer_rounds_than_columns_makes_no_budget_file(tmp_path, capsys):
    """AIM refuses T below its private columns: refused before a new account is
    made, since a new account's total (and relation) can never be changed."""
    from synth_core.cli import main
    acct = tmp_path / "titanic-budget.json"
    assert main(["run", "--sample", "titanic", "--mechanism", "aim", "--rounds", "2",
                 "--epsilon", "1", "--quiet", "--budget-file", str(acct),
                 "--budget-total-epsilon", "3", "--out", str(tmp_path / "s.csv")]) == 2
    err = capsys.readouterr().err
    assert "T=2 is smaller than the number of (private) columns" in err
    assert not acct.exists() and not (tmp_path / "s.csv").exists()


def test_a_comparison_job_is_refused_when_another_session_took_the_rest(wb):
    from synth_core.workbench import REFUSED
    wb.update_settings(mechanism="mwem-pgm")        # MWEM+PGM spends exactly its rho
    rho1 = rho_from_epsilon_delta(1.0, wb.settings.delta)
    fingerprint = wb.source.fingerprint()
    BudgetAccount.create(budget_path(fingerprint), label="titanic", fingerprint=fingerprint,
                         total_rho=2 * rho1)
    other = Workbench()                              # a second session on the same table
    other.load_sample("titanic")
    other.update_settings(mechanism="mwem-pgm", epsilon=1.0, **FAST)
    sweep = wb.start_compare(["mwem-pgm"], [1.0], 2)   # 2 x rho(1): fits when it starts
    other.start_run()                                # takes one rho(1) meanwhile
    assert sweep.wait(180) and other.worker.wait(120)
    statuses = sorted(r["status"] for r in sweep.rows)
    assert statuses == ["finished", REFUSED]
    refused = next(r for r in sweep.rows if r["status"] == REFUSED)
    assert "Refused" in refused["error"] and "left" in refused["error"]
    assert len(wb.compare_results()[0]) == 1 and wb.compare.runs == 1
    assert wb.dataset_budget().spent == pytest.approx(2 * rho1)


def test_the_repeat_command_is_charged_to_the_tables_account_without_naming_its_file(
        wb, tmp_path, capsys):
    """The script names no account file (its name is the table's fingerprint), and
    run where the workbench runs, it is charged to the table's account all the same:
    the CLI finds the account by the table's content."""
    import shlex

    from synth_core.cli import main
    wb.update_settings(mechanism="mwem-pgm")        # spends exactly its rho
    assert "budgets folder" not in wb.reproduce_command()
    account = wb.set_dataset_budget(1.2, 1e-9)     # one run of epsilon 1 fits, not two
    command = wb.reproduce_command()
    code = "\n".join(line for line in command.splitlines() if not line.startswith("#"))
    assert "--budget-file" not in code and "budgets folder" in command
    assert account.path.name not in command and account.fingerprint[:16] not in command
    argv = shlex.split(code.replace("\\\n", " "))[2:]      # after "synth run"
    out = ["--out", str(tmp_path / "s.csv"), "--report", str(tmp_path / "r.json")]
    argv = [a for a in argv if a not in ("synthetic.csv", "report.json", "--out", "--report")]
    assert main(["run", *argv, *out, "--epsilon", "1", "--quiet"]) == 0
    err = capsys.readouterr().err     # the account's file name is the table's fingerprint
    assert "in the workbench's budgets folder" in err and account.path.name not in err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["budget_account"]["this_run_rho"] == pytest.approx(
        report["privacy"]["rho_spent"])
    assert wb.dataset_budget().spent == pytest.approx(report["privacy"]["rho_spent"])
    assert main(["run", *argv, *out, "--epsilon", "1", "--quiet"]) == 2    # past the total
    assert "Refused" in capsys.readouterr().err


def test_a_command_line_account_is_registered_so_a_second_one_is_refused(tmp_path, capsys):
    """Two --budget-file accounts of one table would give it two totals: the first is
    registered in the budgets folder, so the second is refused, a run without a
    budget file is charged to the first, and the workbench finds it."""
    from synth_core.cli import main
    from synth_core.workbench.budget import BudgetService
    run = ["run", "--sample", "titanic", "--mechanism", "mwem-pgm", "--epsilon", "1",
           "--rounds", "2", "--quiet", "--out", str(tmp_path / "s.csv"),
           "--report", str(tmp_path / "r.json")]
    first, second = tmp_path / "a" / "first.json", tmp_path / "second.json"
    first.parent.mkdir()
    assert main([*run, "--budget-file", str(first), "--budget-total-epsilon", "3"]) == 0
    capsys.readouterr()
    assert main([*run, "--budget-file", str(second), "--budget-total-epsilon", "3"]) == 2
    err = capsys.readouterr().err
    assert "would be a second account" in err and str(first.resolve()) in err
    assert not second.exists()
    assert main(run) == 0                                     # charged to the first
    assert f"'{first.resolve()}'" in capsys.readouterr().err
    assert len(BudgetAccount.open(first).charges) == 2
    wb = Workbench()
    wb.load_sample("titanic")
    assert wb.dataset_budget().path.resolve() == first.resolve()
    with pytest.raises(ConfigError):                          # no second total in the workbench
        wb.set_dataset_budget(5.0, 1e-9)
    # the account gone: every run on the table stops and says what to do
    first.rename(tmp_path / "moved.json")
    assert main(run) == 2
    err = capsys.readouterr().err
    assert "missing" in err and "restore it from a backup" in err
    fingerprint = wb.source.fingerprint()
    with pytest.raises(ConfigError, match="missing"):
        BudgetService.account(fingerprint)


def test_a_second_account_for_a_table_the_workbench_keeps_one_for_is_refused(wb, tmp_path,
                                                                            capsys):
    from synth_core.cli import main
    account = wb.set_dataset_budget(5.0, 1e-9)
    fresh = tmp_path / "table-budget.json"
    assert main(["run", "--sample", "titanic", "--mechanism", "mwem-pgm", "--epsilon", "1",
                 "--rounds", "2", "--quiet", "--budget-file", str(fresh),
                 "--budget-total-epsilon", "5", "--out", str(tmp_path / "s.csv")]) == 2
    err = capsys.readouterr().err
    assert "would be a second account" in err and account.path.name not in err
    assert "in the workbench's budgets folder" in err
    assert not fresh.exists() and not (tmp_path / "s.csv").exists()
    assert account.path.exists() and wb.dataset_budget().spent == 0
    # a copy of the account (or an account made before the workbench's) is refused too
    copy = tmp_path / "copy.json"
    copy.write_bytes(account.path.read_bytes())
    assert main(["run", "--sample", "titanic", "--mechanism", "mwem-pgm", "--epsilon", "1",
                 "--rounds", "2", "--quiet", "--budget-file", str(copy),
                 "--out", str(tmp_path / "s.csv")]) == 2
    assert "is another account of it" in capsys.readouterr().err
    assert BudgetAccount.open(copy).charges == [] and wb.dataset_budget().spent == 0
    # the workbench's own file, named, is that account
    assert main(["run", "--sample", "titanic", "--mechanism", "mwem-pgm", "--epsilon", "1",
                 "--rounds", "2", "--quiet", "--budget-file", str(account.path),
                 "--out", str(tmp_path / "s.csv"), "--report", str(tmp_path / "r.json")]) == 0
    assert len(wb.dataset_budget().charges) == 1


def test_synth_sweep_is_charged_to_the_tables_account_and_refused_up_front(wb, tmp_path,
                                                                           capsys):
    """A sweep on a table whose total is set: refused before any run when its runs
    together would pass what is left; else every run is reserved and settled."""
    from synth_core.cli import main
    from synth_core.experiments import ResultStore
    wb.set_dataset_budget(1.2, 1e-9)             # one run of epsilon 1 fits, not two
    spec = tmp_path / "sweep.toml"

    def write(epsilons):
        spec.write_text(f"""name = "budgeted"
mechanisms = ["mwem-pgm"]
epsilons = {epsilons}
seeds = [0]
[settings]
rounds = 2
fit_iters = 10
final_fit_iters = 20
[[datasets]]
name = "titanic"
sample = "titanic"
""")
    store = tmp_path / "store"
    write([1.0, 1.0001])                       # two runs of about rho(1): more than rho(1.2)
    assert main(["sweep", str(spec), "--store", str(store), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Refused: this sweep's 2 run(s) on dataset 'titanic'" in err
    assert not ResultStore(store).runs().shape[0] and wb.dataset_budget().spent == 0
    write([1.0])
    assert main(["sweep", str(spec), "--store", str(store), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "each of its runs is charged to it" in err
    # the run's warning, once, as one line (not Python's warning with its source line)
    assert err.count("synth: warning: mwem-pgm does not use public rows") == 1
    assert "RunWarning" not in err
    runs = ResultStore(store).runs()
    assert list(runs["status"]) == ["finished"]
    charges = wb.dataset_budget().charges
    assert len(charges) == 1 and "synth sweep" in charges[0].what
    assert wb.dataset_budget().spent == pytest.approx(float(runs["rho_spent"].iloc[0]))


def test_the_public_only_baseline_reserves_nothing(wb):
    wb.set_dataset_budget(0.5, 1e-9)
    sweep = wb.start_compare(["public-only"], [10.0], 1)   # eps 10 would not fit; it spends nothing
    assert sweep.wait(120)
    acc = wb.dataset_budget()
    assert [c.rho_reserved for c in acc.charges] == [0.0] and acc.spent == 0.0


def test_a_refusal_says_which_epsilon_still_fits(tmp_path):
    acc = BudgetAccount.create(tmp_path / "a.json", label="t", fingerprint="f", epsilon=2.0,
                               delta=1e-9)
    acc.reserve(rho_from_epsilon_delta(1.0, 1e-9), "first", guarantee=BOUNDED)
    with pytest.raises(BudgetExceededError) as exc:
        acc.reserve(rho_from_epsilon_delta(2.0, 1e-9), "second", delta=1e-9, guarantee=BOUNDED)
    left = cdp_epsilon(acc.remaining, 1e-9)
    assert 1.0 < left < 2.0                            # rho adds: more than 2 - 1 is left
    assert f"epsilon up to {left:.4g}" in exc.value.hint
    acc.reserve(rho_from_epsilon_delta(left * 0.999, 1e-9), "fits", delta=1e-9, guarantee=BOUNDED)


def _titanic_files(tmp_path) -> list[str]:
    """The Titanic sample as files in a folder whose name says what the table is."""
    folder = tmp_path / "clinic_cohort_2024"
    folder.mkdir()
    for name in ("private.csv", "public.csv", "schema.json"):
        (folder / name).write_bytes((ROOT / "sample_data" / "titanic" / name).read_bytes())
    return ["--data", str(folder / "private.csv"), "--public", str(folder / "public.csv"),
            "--schema", str(folder / "schema.json")]


def test_the_cli_label_is_the_file_name_not_its_path(tmp_path, monkeypatch):
    """The label goes into release reports: a file's folders would tell where (and under
    what name) the curator keeps the private table."""
    from synth_core.cli import main
    files = _titanic_files(tmp_path)
    common = ["run", *files, "--mechanism", "mwem-pgm", "--rounds", "2", "--epsilon", "0.5",
              "--fit-iters", "10", "--final-fit-iters", "20", "--quiet",
              "--budget-total-epsilon", "2", "--report", str(tmp_path / "r.json"),
              "--out", str(tmp_path / "s.csv")]
    assert main([*common, "--budget-file", str(tmp_path / "a.json")]) == 0
    report = (tmp_path / "r.json").read_text()
    assert json.loads(report)["budget_account"]["label"] == "private.csv"
    assert "clinic_cohort_2024" not in report and str(tmp_path) not in report
    # a second account of the table needs a budgets folder that does not know the first
    monkeypatch.setenv("SYNTH_WORKBENCH_OUT", str(tmp_path / "elsewhere"))
    assert main([*common, "--budget-file", str(tmp_path / "b.json"),
                 "--budget-label", "titanic passengers"]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["budget_account"]["label"] == \
        "titanic passengers"


def test_an_account_made_in_memory_refuses_a_duckdb_run_and_says_why(tmp_path, capsys):
    """Memory hashes the loaded table, duckdb the file's bytes: the same file cannot be
    recognised across the two, and the message must not send the curator to make a
    second account (a second total for the same table)."""
    from synth_core.cli import main
    files = _titanic_files(tmp_path)
    acct = tmp_path / "a.json"
    common = ["run", *files, "--mechanism", "mwem-pgm", "--rounds", "2", "--epsilon", "0.5",
              "--fit-iters", "10", "--final-fit-iters", "20", "--quiet", "--budget-file",
              str(acct), "--report", str(tmp_path / "r.json"), "--out", str(tmp_path / "s.csv")]
    assert main([*common, "--budget-total-epsilon", "2"]) == 0
    capsys.readouterr()
    assert main([*common, "--backend", "duckdb"]) == 2
    err = capsys.readouterr().err
    assert "table content" in err and "file bytes" in err and "--backend memory" in err
    assert "do not create one" in err and "Traceback" not in err
    assert len(BudgetAccount.open(acct).charges) == 1          # nothing charged
    assert main([*common, "--budget-total-epsilon", "3"]) == 2  # a total is never changed
    err = capsys.readouterr().err
    assert "epsilon 2 at delta 1e-09" in err and "never changed" in err
    assert main([*common, "--budget-total-epsilon", "2"]) == 0  # the same total: the account
    # a repeat at another --delta names the same total (the account's delta is its own)
    assert main([*common, "--budget-total-epsilon", "2", "--delta", "1e-6"]) == 0
    assert main([*common, "--budget-total-epsilon", "2", "--budget-delta", "1e-6"]) == 2
    assert "never changed" in capsys.readouterr().err
    assert main([*common, "--budget-label", "other name"]) == 0
    assert "keeps its label 'private.csv'" in capsys.readouterr().err


@pytest.mark.parametrize("trial", range(20))
def test_accounts_created_at_once_by_many_callers_are_one_account(tmp_path, trial):
    """Callers that all find no account and all create it: one creates, the others open
    the account it made (none is refused for losing the race). One trial of 8 threads
    loses the race about a third of the time without the fallback; 20 trials almost
    always do."""
    from synth_core.budget import open_for_table
    path, start = tmp_path / "acct.json", threading.Barrier(8)
    opened, failed = [], []

    def one():
        start.wait()
        try:
            opened.append(open_for_table(path, fingerprint="f" * 64, label="t", epsilon=1.0,
                                         delta=1e-9, fingerprint_of="table content"))
        except ConfigError as exc:
            failed.append(exc)

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failed and len(opened) == 8
    assert {a.path for a in opened} == {path} and BudgetAccount.open(path).charges == []


@pytest.mark.parametrize("value, found", [
    ("missing/private.csv", False),
    ("missing/parts/*.parquet", True),        # a duckdb glob: the backend reads it
    ("hdfs:///census/", True),                 # a Spark URL
])
def test_a_missing_input_names_its_option(value, found):
    from argparse import Namespace

    from synth_core.cli import _check_inputs_exist
    from synth_core.errors import DataError
    args = Namespace(data=value, public=None, schema=None)
    if found:
        _check_inputs_exist(args)
        return
    with pytest.raises(DataError, match=r"^--data: file 'missing/private.csv' not found"):
        _check_inputs_exist(args)
    with pytest.raises(DataError, match=r"^--schema: file"):
        _check_inputs_exist(Namespace(data=None, public=None, schema="none.json"))


def test_a_release_after_a_comparison_names_no_seed_in_the_accounts_history(wb):
    """The account's history goes into every release report; the Compare and sweep
    entries named each run with its seed ("... eps=1 seed=0"), which regenerates a
    research run's noise. They name the run without it, and check_release refuses
    a seed written into any string."""
    wb.update_settings(mechanism="mwem-pgm")
    wb.set_dataset_budget(5.0, 1e-9)
    sweep = wb.start_compare(["mwem-pgm"], [1.0], 2)
    assert sweep.wait(120)
    worker = wb.start_run()
    assert worker.wait(120)
    run = wb.collect()
    history = run.result.report["budget_account"]["history"]
    assert [h["what"].startswith("compare: ") for h in history] == [True, True, False]
    # named as the single run beside it is, and without the table's name, which a file
    # name can make say whose records they are (every later release carries the history)
    assert history[0]["what"] == "compare: MWEM+PGM, ε=1"
    assert history[2]["what"] == "MWEM+PGM, ε=1"
    assert not any("seed" in h["what"] for h in history)
    check_release(run.result.report)
    with pytest.raises(ConfigError, match="names a seed"):
        check_release({"budget_account": {"history": [{"what": "compare: x eps=1 seed=0"}]}})
    check_release({"statement": "a seeded research run; the seed is not released"})
    # the data's own values may read so: a category is data, not a run's seed
    check_release({"schema": {"columns": [{"name": "bag", "categories": ["seed: 3 kg"]}]}})


def test_two_dataset_names_for_one_table_run_once_and_are_checked_together(wb, tmp_path,
                                                                           capsys):
    """Two names for the same table and settings are one job (the same run id): run
    once, not twice with the second overwriting the first; and the up-front check
    sums a table's runs under every name it has."""
    from synth_core.cli import main
    from synth_core.experiments import ResultStore, Sweep, pending_jobs
    wb.set_dataset_budget(1.2, 1e-9)                 # one run of epsilon 1 fits, not two
    spec = tmp_path / "sweep.toml"
    spec.write_text('''name = "twice"
mechanisms = ["mwem-pgm"]
epsilons = [1.0]
seeds = [0]
[settings]
rounds = 2
[[datasets]]
name = "a"
sample = "titanic"
[[datasets]]
name = "b"
sample = "titanic"
''')
    store = tmp_path / "store"
    todo, _ = pending_jobs(Sweep.from_file(spec), ResultStore(store))
    assert [j.dataset.name for j in todo] == ["a"]
    assert main(["sweep", str(spec), "--store", str(store), "--quiet"]) == 0
    assert "dataset 'a' has a budget account" in capsys.readouterr().err
    assert len(wb.dataset_budget().charges) == 1 and len(ResultStore(store).runs()) == 1
    spec.write_text(spec.read_text().replace("seeds = [0]", "seeds = [1]")
                    .replace('name = "b"\nsample = "titanic"',
                             'name = "b"\nsample = "titanic"\ndrop_columns = ["parch"]'))
    assert main(["sweep", str(spec), "--store", str(store), "--quiet"]) == 2
    assert "on datasets 'a', 'b'" in capsys.readouterr().err


def test_a_run_counting_the_file_on_disk_says_it_found_no_account(wb, tmp_path, capsys):
    """The workbench's account of the loaded table is keyed by its content; a duckdb run
    hashes the file's bytes and cannot find it: it says so instead of running silently
    uncapped, and names the backend that is charged."""
    from synth_core.cli import main
    wb.set_dataset_budget(5.0, 1e-9)
    assert main(["run", "--sample", "titanic", "--backend", "duckdb", "--mechanism",
                 "mwem-pgm", "--epsilon", "1", "--rounds", "2", "--quiet",
                 "--out", str(tmp_path / "s.csv"), "--report", str(tmp_path / "r.json")]) == 0
    err = capsys.readouterr().err
    assert "no budget account was found for this file's bytes" in err
    assert "--backend memory" in err and wb.dataset_budget().charges == []


def test_no_output_replaces_an_input_or_a_budget_account_and_nothing_is_spent(tmp_path,
                                                                              capsys):
    """An output path that is one of the run's inputs (the private table, the public
    table, the schema, the budget file) or any budget account is refused before
    the run, so the private table is not replaced by synthetic data nor an
    account's history by a report; the account is not charged."""
    from synth_core.cli import main
    files = _titanic_files(tmp_path)
    data, public, schema = files[1], files[3], files[5]
    acct = tmp_path / "acct.json"
    run = ["run", *files, "--mechanism", "mwem-pgm", "--rounds", "2", "--epsilon", "0.5",
           "--quiet"]
    assert main([*run, "--budget-file", str(acct), "--budget-total-epsilon", "3",
                 "--out", str(tmp_path / "s.csv"), "--report", str(tmp_path / "r.json")]) == 0
    spent = BudgetAccount.open(acct).spent
    before = {p: Path(p).read_bytes() for p in (data, public, schema, acct)}
    for out, report, expected in [(data, tmp_path / "r.json", "the private table (--data)"),
                                  (public, tmp_path / "r.json", "the public table (--public)"),
                                  (tmp_path / "s.csv", schema, "the schema (--schema)"),
                                  (tmp_path / "s.csv", acct, "a budget account")]:
        assert main([*run, "--out", str(out), "--report", str(report)]) == 2
        assert expected in capsys.readouterr().err
    assert main(["schema", "infer", data, "--out", str(acct)]) == 2
    assert "a budget account" in capsys.readouterr().err
    # an account re-saved with its keys sorted is still one
    sorted_keys = tmp_path / "sorted.json"
    sorted_keys.write_text(json.dumps(json.loads(acct.read_text()), sort_keys=True))
    assert main([*run, "--out", str(tmp_path / "s.csv"), "--report", str(sorted_keys)]) == 2
    assert "a budget account" in capsys.readouterr().err
    before[sorted_keys] = sorted_keys.read_bytes()
    # the pointer that registered the account in the budgets folder is one too
    from synth_core.workbench.budget import budget_dir
    pointer = next(budget_dir().glob("*.json"))
    assert main([*run, "--out", str(tmp_path / "s.csv"), "--report", str(pointer)]) == 2
    assert "a budget account" in capsys.readouterr().err
    before[pointer] = pointer.read_bytes()
    # a new budget file named as the report: refused before the run, not after it
    new = tmp_path / "new-acct.json"
    assert main([*run, "--budget-file", str(new), "--budget-total-epsilon", "3",
                 "--out", str(tmp_path / "s.csv"), "--report", str(new)]) == 2
    assert "the budget account (--budget-file)" in capsys.readouterr().err
    assert not new.exists()
    if Path("/proc/self").is_dir():    # a folder os.access calls writable (as root) that takes no file
        assert main([*run, "--out", "/proc/o.csv", "--report", str(tmp_path / "r.json")]) == 2
        assert "does not take new files" in capsys.readouterr().err
    assert {p: Path(p).read_bytes() for p in before} == before
    assert BudgetAccount.open(acct).spent == spent


def test_a_budget_file_that_cannot_be_one_says_which_and_why(tmp_path, capsys):
    from synth_core.cli import main
    (tmp_path / "table.csv").write_text("a\n1\n")
    run = ["run", "--sample", "titanic", "--mechanism", "mwem-pgm", "--epsilon", "1",
           "--rounds", "2", "--quiet", "--budget-total-epsilon", "3",
           "--out", str(tmp_path / "s.csv")]
    for budget_file, expected in [(tmp_path, "is a folder, not a budget account"),
                                  (tmp_path / "table.csv" / "b.json",
                                   "Cannot create the budget account")]:
        assert main([*run, "--budget-file", str(budget_file)]) == 2
        err = capsys.readouterr().err
        assert expected in err and "Restore" not in err and "Traceback" not in err


def test_a_run_refused_for_its_inputs_makes_no_new_account(tmp_path, capsys):
    """A new account's total can never be changed, and a pointer to it stays in the
    budgets folder: a first run refused for its inputs must not make it, else a typo
    fixes the table's total (and deleting the file leaves every run refused)."""
    from synth_core.cli import main
    from synth_core.workbench.budget import budget_dir
    files = _titanic_files(tmp_path)
    acct = tmp_path / "a.json"
    (tmp_path / "columns.json").write_text('{"columns": [{"name": "age", "kind": "numeric", '
                                           '"lower": 0, "upper": 80, "bins": 8}]}')
    common = ["run", "--mechanism", "mwem-pgm", "--rounds", "2", "--epsilon", "0.5",
              "--fit-iters", "10", "--final-fit-iters", "20", "--quiet", "--budget-file",
              str(acct), "--budget-total-epsilon", "2", "--report", str(tmp_path / "r.json"),
              "--out", str(tmp_path / "s.csv")]
    refused = [("--data", files[1], "--backend", "duckdb"),       # no domain for duckdb
               ("--data", files[1], "--schema", str(tmp_path / "columns.json"))]  # columns left out
    for inputs in refused:
        assert main([*common, *inputs]) == 2
        err = capsys.readouterr().err
        assert "error:" in err and "Traceback" not in err
        assert not acct.exists()
        assert not budget_dir().exists() or not any(budget_dir().glob("*.json"))
    assert main([*common, *files[:2], "--budget-total-epsilon", "3"]) == 0
    assert BudgetAccount.open(acct).cap == {"epsilon": 3.0, "delta": 1e-09}


def test_a_name_that_reads_as_a_seed_is_refused_before_anything_is_spent(tmp_path, capsys):
    """check_release refuses text naming a seed. A file called 'cohort-seed=7.csv'
    (the account's default label) or public rows so named were refused only after
    the run had been charged, on every run; a dropped column so named too."""
    from synth_core.cli import main
    sample = ROOT / "sample_data" / "titanic"
    private, public = tmp_path / "cohort-seed=7.csv", tmp_path / "pub-seed=3.csv"
    private.write_bytes((sample / "private.csv").read_bytes())
    public.write_bytes((sample / "public.csv").read_bytes())
    acct = tmp_path / "a.json"
    common = ["run", "--schema", str(sample / "schema.json"), "--mechanism", "mwem-pgm",
              "--rounds", "2", "--epsilon", "0.5", "--fit-iters", "10", "--final-fit-iters",
              "20", "--quiet", "--budget-file", str(acct), "--budget-total-epsilon", "2",
              "--report", str(tmp_path / "r.json"), "--out", str(tmp_path / "s.csv")]
    assert main([*common, "--data", str(private), "--public", str(public)]) == 2
    err = capsys.readouterr().err
    assert "public rows' description \"public table 'pub-seed=3.csv', 301 rows\" reads as a " \
           "seed ('seed=3')" in err and "Rename the public file" in err and not acct.exists()
    assert main([*common, "--data", str(private), "--no-public"]) == 2
    err = capsys.readouterr().err
    assert "budget account's label 'cohort-seed=7.csv' reads as a seed" in err
    assert "--budget-label" in err and not acct.exists()
    assert main([*common, "--data", str(private), "--no-public",
                 "--budget-label", "cohort 7"]) == 0
    assert BudgetAccount.open(acct).label == "cohort 7"
    # a dropped column's name is the data's own, like the columns'
    frame = pd.read_csv(private).assign(**{"note seed:1": "x"})
    frame.to_csv(private, index=False)
    common[common.index(str(acct))] = str(tmp_path / "another-table.json")
    assert main([*common, "--data", str(private), "--no-public", "--drop",
                 "note seed:1", "--budget-label", "cohort 7 with notes"]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["data"]["dropped_columns"] == \
        ["note seed:1"]


def test_an_accounts_old_texts_that_read_as_a_seed_are_withheld_not_fatal(tmp_path):
    """An account made before labels were checked ('cohort-seed=7.csv') or holding an
    old history entry that names a seed made every later run be charged and then
    refused. A release withholds such a text; new entries that would are refused
    before anything is reserved, and so is a column so named."""
    import json as _json
    s = load_sample("titanic")
    path = tmp_path / "old.json"
    acc = BudgetAccount.create(path, label="ok", fingerprint=table_fingerprint(s.private),
                               epsilon=3.0, delta=1e-9)
    state = _json.loads(path.read_text())
    state["label"] = "cohort-seed=7.csv"                    # as older versions wrote it
    path.write_text(_json.dumps(state))
    acc = BudgetAccount.open(path)
    acc.settle(acc.reserve(0.001, "compare", guarantee=BOUNDED, mechanism="mwem-pgm"), 0.001,
               finished=True)
    state = _json.loads(path.read_text())                   # the entry older versions wrote
    state["charges"][0]["what"] = "compare alicesmith_hivclinic.csv mwem-pgm eps=1 seed=0"
    del state["charges"][0]["names_run_only"]
    path.write_text(_json.dumps(state))
    result = synthesize(s.private, schema=s.schema, mechanism="mwem-pgm", epsilon=0.5,
                        budget=BudgetAccount.open(path), **FAST)
    block = result.report["budget_account"]
    assert block["label"] == "(withheld: it reads as a seed)"
    # an entry written before entries named the run only may name the table's file: a
    # release shows its mechanism
    assert block["history"][0]["what"] == "mwem-pgm"
    assert block["history"][1]["what"] == "mwem-pgm at epsilon=0.5"
    check_release(result.report)
    spent = BudgetAccount.open(path).spent
    with pytest.raises(ConfigError, match="run's entry in the table's budget history"):
        BudgetAccount.open(path).reserve(0.001, "aim seed=3 eps=1", guarantee=BOUNDED)
    renamed = s.private.rename(columns={"pclass": "seed=1"})
    schema = s.schema.to_json()
    schema["columns"][0]["name"] = "seed=1"
    assert s.schema.names[0] == "pclass"
    other = BudgetAccount.create(tmp_path / "r.json", label="renamed", epsilon=3.0, delta=1e-9,
                                 fingerprint=table_fingerprint(renamed))
    with pytest.raises(ConfigError, match="column name 'seed=1' reads as a seed"):
        synthesize(renamed, schema=schema, mechanism="mst", epsilon=0.5, budget=other, **FAST)
    assert other.charges == [] and BudgetAccount.open(path).spent == spent


def test_a_workbench_release_of_a_table_whose_old_label_reads_as_a_seed_is_made(wb):
    """The release_selection block named an old account label ('cohort-seed=7.csv')
    raw, so every release of the table was refused once it had a second run."""
    account = wb.set_dataset_budget(5.0, 1e-9, label="cohort")
    state = json.loads(account.path.read_text())
    state["label"] = "cohort-seed=7.csv"                   # as older versions wrote it
    account.path.write_text(json.dumps(state))
    wb.update_settings(mechanism="mwem-pgm", epsilon=1.0, **FAST)
    runs = []
    for _ in range(2):
        assert wb.start_run().wait(120)
        runs.append(wb.collect())
    for run in runs:
        files = wb.release_files(run)
        assert "seed=7" not in files["report.json"].decode()
        check_release(json.loads(files["report.json"]))


def test_a_total_set_while_a_run_is_going_counts_that_run(wb, tmp_path, capsys):
    """Setting a table's total while one of this session's runs is still going: the
    run is reserved in the new account at once, so a run admitted next cannot
    take the same budget (it was: 141% of the total spent)."""
    from synth_core.cli import main
    wb.update_settings(mechanism="mwem-pgm", epsilon=0.5, rounds=12, fit_iters=300,
                       final_fit_iters=300)
    rho = rho_from_epsilon_delta(0.5, wb.settings.delta)
    wb.start_run()
    assert not wb.worker.done                                  # still going
    with pytest.raises(ConfigError, match="still going"):      # a total the run alone passes
        wb.set_dataset_budget(0.4, wb.settings.delta)
    account = wb.set_dataset_budget(0.6, wb.settings.delta)
    assert account.spent == pytest.approx(rho)                   # reserved, not yet spent
    assert main(["run", "--sample", "titanic", "--mechanism", "mwem-pgm", "--epsilon", "0.5",
                 "--rounds", "2", "--quiet", "--out", str(tmp_path / "s.csv"),
                 "--report", str(tmp_path / "r.json")]) == 2
    assert "Refused" in capsys.readouterr().err
    assert wb.worker.wait(120)
    spent = BudgetAccount.open(account.path)
    assert spent.spent <= spent.total_rho and spent.spent == pytest.approx(rho)
    assert [c.rho_spent for c in spent.charges] == [pytest.approx(rho)]


def test_a_symlink_to_an_account_is_that_account(tmp_path, capsys):
    """A symlink given as --budget-file charges the file it points to, under that file's
    lock; before, it took its own lock and its first write replaced the link with a
    copy, splitting the account (132% of the total spent)."""
    from synth_core.cli import main
    run = ["run", "--sample", "titanic", "--mechanism", "mwem-pgm", "--epsilon", "0.5",
           "--rounds", "2", "--quiet", "--out", str(tmp_path / "s.csv"),
           "--report", str(tmp_path / "r.json")]
    real = tmp_path / "acct.json"
    assert main([*run, "--budget-file", str(real), "--budget-total-epsilon", "1.2"]) == 0
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert main([*run, "--budget-file", str(link)]) == 0
    assert link.is_symlink() and len(BudgetAccount.open(real).charges) == 2
    assert BudgetAccount.open(link).path == real.resolve()
    for _ in range(20):                       # through the link and the pointer, until full
        if main([*run, "--budget-file", str(link)]) == 2 or main(run) == 2:
            break
    assert "Refused" in capsys.readouterr().err and link.is_symlink()
    account = BudgetAccount.open(real)
    assert account.total_rho - rho_from_epsilon_delta(0.5, 1e-9) < account.spent <= \
        account.total_rho


def test_registering_a_pointer_waits_for_a_total_being_set(tmp_path):
    """The workbench setting a total and a command-line account registering itself for
    the same table take one lock: the second finds the first (both used to succeed,
    leaving the table with two totals)."""
    import fcntl
    import time

    from synth_core.workbench.budget import register_account
    fingerprint = "ab" * 32
    path = budget_path(fingerprint)
    path.parent.mkdir(parents=True, exist_ok=True)
    cli_account = account(tmp_path, name="cli.json")
    result = []
    with open(path.with_name(path.name + ".lock"), "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)          # as BudgetAccount.create does
        worker = threading.Thread(target=lambda: result.append(
            register_account(fingerprint, cli_account)))
        worker.start()
        time.sleep(0.3)
        assert worker.is_alive() and not path.exists()      # waiting for the lock
        path.write_text(cli_account.path.read_text())       # the workbench's account lands
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    worker.join(10)
    assert result == [False] and "synth-budget-account/" in path.read_text()


def test_a_pointer_to_itself_or_to_a_pointer_is_called_damaged():
    from synth_core.workbench.budget import POINTER_FORMAT, BudgetService
    fingerprint = "cd" * 32
    path = budget_path(fingerprint)
    path.parent.mkdir(parents=True, exist_ok=True)
    other = path.with_name("other.json")
    for target, said in [(path, "points to itself"), (other, "points to a pointer")]:
        other.write_text(json.dumps({"format": POINTER_FORMAT, "account": str(path)}))
        path.write_text(json.dumps({"format": POINTER_FORMAT, "account": str(target)}))
        with pytest.raises(ConfigError, match=said):
            BudgetService.account(fingerprint)


# ---------------------------------------------------------------- one relation per total


def test_a_guarantee_covers_runs_with_its_relation_and_fewer_public_columns():
    """Runs add up in rho under one relation only: a total under replace-one-record
    covers a run that treats a subset of its public columns as public (every pair of
    neighbours of the total's relation is a pair of the run's), never one with more
    public columns (released without noise) nor an add/remove-one run (up to 4 rho)."""
    total = Guarantee("bounded", ("sex", "pclass"))
    assert Guarantee("bounded").refusal_under(total) is None
    assert Guarantee("bounded", ("pclass",)).refusal_under(total) is None
    assert "survived as public too" in Guarantee("bounded", ("pclass", "survived")) \
        .refusal_under(total)
    assert "4 times" in Guarantee("unbounded").refusal_under(Guarantee("bounded"))
    assert "number of records" in Guarantee("bounded").refusal_under(Guarantee("unbounded"))
    assert Guarantee.widest([Guarantee("bounded", ("a",)), Guarantee("bounded", ("b",))]) == \
        Guarantee("bounded", ("a", "b"))
    assert Guarantee.widest([Guarantee("bounded"), Guarantee("unbounded")]) is None


def test_one_account_refuses_runs_under_another_relation(tmp_path, capsys):
    """helper-60 charged a bounded, an unbounded and a public-columns run to one account:
    it added their rho as if each cost the same under one guarantee."""
    from synth_core.cli import main
    from synth_core.errors import GuaranteeMismatchError
    acct = tmp_path / "a.json"
    run = ["run", "--sample", "titanic", "--epsilon", "0.5", "--rounds", "2", "--fit-iters", "10",
           "--final-fit-iters", "20", "--quiet", "--budget-file", str(acct),
           "--out", str(tmp_path / "s.csv"), "--report", str(tmp_path / "r.json")]
    assert main([*run, "--mechanism", "mwem-pgm", "--budget-total-epsilon", "3"]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["budget_account"]["guarantee"] == \
        "bounded DP (replace one record)"
    capsys.readouterr()
    for refused, reason in [(["--mechanism", "mwem-pgm", "--neighbours", "unbounded"], "4 times"),
                            (["--mechanism", "vjam-pgm", "--no-public",
                              "--public-columns", "pclass,sex"], "pclass, sex as public too")]:
        assert main([*run, *refused]) == 2
        err = capsys.readouterr().err
        assert reason in err and "--neighbours bounded" in err and "Traceback" not in err
    account = BudgetAccount.open(acct)
    assert len(account.charges) == 1 and account.guarantee == Guarantee("bounded")
    with pytest.raises(GuaranteeMismatchError):
        account.reserve(0.01, "x", guarantee=Guarantee("bounded", ("sex",)))
    # a total stated with public columns covers a run that keeps them private
    wide = BudgetAccount.create(tmp_path / "w.json", label="t", fingerprint="f", total_rho=1.0,
                                guarantee=Guarantee("bounded", ("sex",)))
    wide.reserve(0.1, "all private", guarantee=Guarantee("bounded"))
    assert wide.guarantee == Guarantee("bounded", ("sex",))


def test_a_release_chosen_among_runs_of_different_relations_claims_no_epsilon(wb):
    """Without a total, a session's runs may mix relations; the Release page's
    statement for a run chosen among them must not add their rho."""
    first = run_once(wb, mechanism="mwem-pgm", neighbours="unbounded")
    second = run_once(wb, mechanism="mwem-pgm", neighbours="bounded")
    block = release_report(wb, second)["release_selection"]
    assert block["epsilon_if_chosen"] is None
    assert "different neighbour relations" in block["statement"]
    assert block["table_rho_spent"] == pytest.approx(first.rho_spent + second.rho_spent)
    with pytest.raises(ConfigError, match="different neighbour relations"):
        wb.set_dataset_budget(5.0, 1e-9)
    assert wb.dataset_budget() is None


def test_helper_61_relations_a_total_admits_are_checked_on_every_path(tmp_path, capsys):
    """helper-61's attacks on the first version of 'one relation per total'."""
    import re

    from synth_core.cli import main
    from synth_core.errors import GuaranteeMismatchError
    files = _titanic_files(tmp_path)
    acct = tmp_path / "a.json"
    run = ["run", *files[:2], *files[4:], "--epsilon", "0.5", "--rounds", "2", "--fit-iters",
           "10", "--final-fit-iters", "20", "--quiet", "--budget-file", str(acct),
           "--out", str(tmp_path / "s.csv"), "--report", str(tmp_path / "r.json")]
    # a mechanism refused for its relation is refused before any account or charge
    assert main([*run, "--mechanism", "jam-pgm", "--neighbours", "unbounded",
                 "--budget-total-epsilon", "3"]) == 2
    assert "defined under bounded DP only, not unbounded" in capsys.readouterr().err
    assert not acct.exists()
    assert main([*run, "--mechanism", "mwem-pgm", "--neighbours", "unbounded",
                 "--budget-total-epsilon", "3"]) == 0
    # a bounded run that spends nothing still publishes the number of records
    assert main([*run, "--mechanism", "public-only"]) == 2
    assert "publishes the number of records" in capsys.readouterr().err
    # records flagged public in the table are released without noise: not under this total
    flagged = tmp_path / "flagged.csv"
    table = pd.read_csv(files[1]).assign(is_public="no")
    table.to_csv(flagged, index=False)
    account = BudgetAccount.open(acct)
    with pytest.raises(GuaranteeMismatchError, match="flagged by column 'is_public'"):
        account.reserve(0.01, "x", guarantee=Guarantee("unbounded", (), "is_public"))
    assert [re.fullmatch(r"run-[0-9a-f]{8}", c.run_id) is not None
            for c in account.charges] == [True]           # no running number to count by
    # a run that failed before measuring anything does not fix a new total's relation
    fresh = BudgetAccount.create(tmp_path / "f.json", label="t", fingerprint="f", total_rho=1.0)
    fresh.settle(fresh.reserve(0.1, "failed", guarantee=Guarantee("unbounded")), 0.0,
                 finished=False)
    assert fresh.guarantee is None
    fresh.reserve(0.1, "bounded", guarantee=BOUNDED)
    assert fresh.guarantee == BOUNDED


def test_a_session_run_is_recorded_when_another_process_makes_the_account(tmp_path,
                                                                         monkeypatch):
    """helper-61: runs of a session made before an account that another session or a
    `synth run --budget-file` created were counted nowhere (one in progress raised in
    its worker thread), and the release then claimed an epsilon."""
    from synth_core.workbench.budget import BudgetService
    from synth_core.workbench.runs import selection_block
    monkeypatch.setenv("SYNTH_WORKBENCH_OUT", str(tmp_path))
    from synth_core.api import RunConfig
    service = BudgetService()
    unbounded = RunConfig("mwem-pgm", epsilon=1.0, neighbours="unbounded")
    done = service.reserve("f" * 64, unbounded, "earlier")          # no account yet
    going = service.reserve("f" * 64, unbounded, "still going")
    service.settle(done, 0.01, finished=True)
    other = BudgetService()                                          # another session
    other.create("f" * 64, 3.0, 1e-9, "t")
    bounded = other.reserve("f" * 64, RunConfig("mwem-pgm", epsilon=1.0), "bounded run")
    other.settle(bounded, 0.01, finished=True)
    charge = service.settle(going, 0.012, finished=True)             # no exception
    assert charge is not None and charge.rho_spent == 0.012
    assert going.account is not None    # the run's report gets the account's block
    spent, where = service.table_spent("f" * 64)
    assert spent == pytest.approx(0.032) and "budget account" in where
    guarantees = service.table_guarantees("f" * 64)
    assert guarantees == {Guarantee("bounded"), Guarantee("unbounded")}
    block = selection_block(0.01, spent, 1e-9, where, guarantees, Guarantee("bounded"))
    assert block["epsilon_if_chosen"] is None
    account = BudgetService.account("f" * 64)
    assert "other relations were charged" in account.release_block(account.charges[-1])[
        "guarantee"]


def test_helper_63_a_failed_first_run_keeps_the_relation_others_were_admitted_under(tmp_path):
    """helper-63: a failed first run reset the total's relation from the next charge,
    leaving runs admitted under the old one uncovered and unlisted."""
    acc = BudgetAccount.create(tmp_path / "a.json", label="t", fingerprint="f", total_rho=1.0)
    with_sex = Guarantee("bounded", ("sex",))
    first = acc.reserve(0.1, "A, sex public", guarantee=with_sex)
    acc.reserve(0.1, "B, all private", guarantee=BOUNDED)
    acc.reserve(0.1, "C, sex public", guarantee=with_sex)
    acc.settle(first, 0.0, finished=False)
    assert acc.guarantee == with_sex and acc.other_guarantees == []


def test_helper_63_row_filters_that_start_alike_are_told_apart():
    """A filter's flag name was cut at 60 characters: two value lists with the same start
    had one name, so a total set with one admitted runs that made the other public."""
    from synth_core.workbench.public import filter_flag_name
    few = [f"value {i}" for i in range(12)]
    more = few + ["value 12"]
    assert filter_flag_name("age", few) != filter_flag_name("age", more)
    assert filter_flag_name("sex", ["F"]) == "public if sex in F"


def test_helper_63_a_wider_relation_on_the_table_keeps_the_selection_block():
    from synth_core.workbench.runs import selection_block
    budget = rho_from_epsilon_delta(1.0, 1e-9)
    block = selection_block(0.6 * budget, 0.95 * budget, 1e-9, "x",
                            {Guarantee("bounded", ("sex",))}, BOUNDED, stated_rho=budget)
    assert block is not None and "columns sex public" in block["statement"]
