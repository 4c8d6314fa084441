"""The Run page learns of a run that ends while the page is being drawn.

app.py collects an ended run at the top of every script run; the Run page then
draws either the live view (which polls) or the last finished run. A short run
(a few rounds on a small table end in a fraction of a second) can end after
app.py looked and before the page decided. Streamlit AppTest of the real app
and a real run; the test's Workbench waits for its run to end right after each
collection, which puts the run's end in that window every time.
"""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from test_app_pages import APP, errors, go, texts
from synth_core.workbench import Workbench


class EndsAfterCollect(Workbench):
    """A Workbench whose run ends just after ``collect`` looked at it (the
    window between app.py's collection and the Run page's drawing)."""

    def collect(self):
        run = super().collect()
        if self.worker is not None:
            assert self.worker.wait(120), "the run did not end in time"
        return run


def test_a_run_that_ends_while_the_page_is_drawn_is_shown_finished():
    wb = EndsAfterCollect()
    wb.load_sample("titanic")
    wb.update_settings(rounds=2, fit_iters=10, final_fit_iters=20, seed=0)
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["wb"] = wb
    go(at, "app_pages/run.py")
    at.button(key="start_run").click().run()
    assert not at.exception and not errors(at)
    assert len(wb.runs) == 1 and wb.worker is None, "the ended run was never collected"
    assert any("Finished in" in s.value for s in at.success), texts(at)
