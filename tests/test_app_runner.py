"""The background run worker (synth_core.runner), as plain Python."""

from __future__ import annotations

import threading
import time

import pytest
from conftest import wait_until

from synth_core import Synthesizer, load_sample
from synth_core.runner import FAILED, FINISHED, STOPPED, RunWorker

FAST = dict(fit_iters=20, final_fit_iters=50, seed=0)


@pytest.fixture(scope="module")
def titanic():
    return load_sample("titanic")


def _kwargs(sample, public=True):
    kw = dict(data=sample.private, schema=sample.schema, data_name="titanic:private")
    if public:
        kw.update(public=sample.public, public_name=sample.public_name)
    return kw


def test_events_arrive_and_result_is_set(titanic):
    worker = RunWorker(Synthesizer("jam-pgm", epsilon=1.0, rounds=3, **FAST), _kwargs(titanic),
                       label="t")
    assert worker.status == "pending" and not worker.done
    worker.start()
    seen = []

    def snapshot_until_done() -> bool:
        seen.append(len(worker.snapshot()[0]))
        return worker.done

    wait_until(snapshot_until_done, 120, "the run to finish")
    assert worker.wait(5)
    assert worker.status == FINISHED, worker.failure
    events = worker.events
    assert [e.round for e in events] == [1, 2, 3]
    assert all(e.source in ("public", "private") for e in events)
    assert seen == sorted(seen)                    # events only ever accumulate
    assert worker.result is not None and len(worker.result.synthetic) == len(titanic.private)
    assert worker.rho_spent == pytest.approx(worker.result.ledger.spent)
    assert worker.rounds_planned == 3
    assert worker.seconds > 0
    with pytest.raises(RuntimeError):
        worker.start()


def test_stop_between_rounds(titanic):
    worker = RunWorker(Synthesizer("jam-pgm", epsilon=1.0, rounds=30, **FAST), _kwargs(titanic))
    worker.stop()                                  # requested before the first round ends
    worker.start()
    assert worker.wait(120)
    assert worker.status == STOPPED
    assert worker.stop_requested
    assert len(worker.events) == 1                 # stopped right after the first round
    assert worker.result is None
    assert 0 < worker.rho_spent < worker.synthesizer.engine.ledger.total


def test_synth_error_is_captured_as_message(titanic):
    worker = RunWorker(Synthesizer("jam-pgm", epsilon=1.0, rounds=3, **FAST),
                       _kwargs(titanic, public=False)).start()
    assert worker.wait(60)
    assert worker.status == FAILED
    assert worker.failure.message == "JAM-PGM needs public rows."
    assert "public" in worker.failure.hint
    assert not worker.failure.internal
    assert "Traceback" not in worker.failure.text()
    assert worker.events == [] and worker.result is None


def test_data_error_names_the_column(titanic):
    bad = titanic.private.copy()
    bad.loc[0, "sex"] = "unknown"
    kw = _kwargs(titanic)
    kw["data"] = bad
    worker = RunWorker(Synthesizer("jam-pgm", epsilon=1.0, rounds=3, **FAST), kw).start()
    assert worker.wait(60)
    assert worker.status == FAILED
    assert worker.failure.column == "sex"
    assert "unknown" in worker.failure.message


def test_unexpected_exception_is_captured(titanic):
    kw = _kwargs(titanic)
    kw["data"] = 42                                # not a table: a clean DataError
    worker = RunWorker(Synthesizer("aim", epsilon=1.0, **FAST), kw).start()
    assert worker.wait(30)
    assert worker.status == FAILED and not worker.failure.internal

    kw = _kwargs(titanic)
    kw["bogus_option"] = 1                         # a programming error: TypeError
    worker = RunWorker(Synthesizer("aim", epsilon=1.0, **FAST), kw).start()
    assert worker.wait(30)
    assert worker.status == FAILED and worker.failure.internal
    assert worker.failure.message.startswith("Internal error: TypeError")


def test_worker_never_blocks_the_caller(titanic):
    worker = RunWorker(Synthesizer("jam-pgm", epsilon=1.0, rounds=3, **FAST), _kwargs(titanic))
    t0 = time.perf_counter()
    worker.start()
    assert time.perf_counter() - t0 < 0.5          # start returns at once
    assert any(t.name.startswith("synth-run") for t in threading.enumerate()) or worker.done
    worker.stop()
    assert worker.wait(120)
