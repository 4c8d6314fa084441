"""Browser test of the workbench's main path in headless Chromium.

Starts ``streamlit run app.py`` on a free local port and drives Debian's
``chromium`` with Playwright (never Playwright's own browser download): load
the Titanic sample, see its public rows, choose small settings, run JAM-PGM,
watch the rounds appear with public/private labels, then download the
synthetic data and the report from the Release page and check their content.
Also: Stop during a long run, and a reload during a run that finds the same
session (the token in the URL) with its run still going.

Screenshots of every page go to ``$WORKBENCH_ARTIFACTS`` (default
``/tmp/workbench-artifacts``).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pandas as pd
import pytest
from conftest import all_keys, wait_until

pytestmark = pytest.mark.slow   # a Streamlit server and Chromium
ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(os.environ.get("WORKBENCH_ARTIFACTS", "/tmp/workbench-artifacts"))
CURATOR_KEYS = {"curator", "scores", "workload_error", "per_marginal_error", "true_error",
                "public_error", "exact_answer"}
#: ``python -m streamlit`` with faulthandler armed: SIGUSR1 writes every thread's
#: stack to the server's log (read by :func:`_server_threads` when a wait times out)
LAUNCH = ("import faulthandler, runpy, signal, sys; "
          "faulthandler.register(signal.SIGUSR1, all_threads=True); "
          "sys.argv[0] = 'streamlit'; runpy.run_module('streamlit', run_name='__main__')")
#: the servers the fixture started, by URL
_SERVERS: dict[str, subprocess.Popen] = {}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _free_port()
    env = dict(os.environ, SYNTH_WORKBENCH_OUT=str(tmp_path_factory.mktemp("workbench-out")))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = open(ARTIFACTS / "streamlit.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    _SERVERS[url] = proc

    def healthy() -> bool:
        if proc.poll() is not None:
            log.flush()
            pytest.fail("streamlit exited: " + (ARTIFACTS / "streamlit.log").read_text()[-2000:])
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        wait_until(healthy, 60, "streamlit's health check at " + url, interval=0.3)
        yield url
    finally:
        _SERVERS.pop(url, None)
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("Debian's chromium is not installed (apt-get install -y chromium); the "
                    "README's test command and .ci/run install it before the tests.")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, headless=True,
                              args=["--no-sandbox", "--disable-gpu",
                                    "--disable-background-networking"])
        try:
            yield b
        finally:
            b.close()


def _idle(page, timeout: float = 30_000) -> None:
    """Wait until the page's script run is over (Streamlit marks its app root
    ``data-test-script-state="notRunning"``): a click during a rerun can be dropped."""
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(
        timeout=timeout)


def _shot(page, name: str) -> None:
    page.wait_for_load_state("networkidle")
    _idle(page)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _goto(page, title: str) -> None:
    """Navigate with the sidebar (keeps the session, unlike a new URL)."""
    page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()
    page.get_by_role("heading", name=title, exact=True).wait_for(timeout=30_000)


def _attempt(what: str, fn) -> str:
    """``fn()`` as text, or why it could not be had (a diagnosis never masks the failure)."""
    try:
        return str(fn())
    except Exception as exc:  # noqa: BLE001 - part of a failure message
        return f"({what} unavailable: {type(exc).__name__}: {str(exc)[:200]})"


def _page_text(page, limit: int = 1500) -> str:
    """The page's main area and sidebar as one line each (whitespace collapsed)."""
    def text(test_id):
        return " ".join(page.get_by_test_id(test_id).first.inner_text(timeout=5_000).split())
    return "\n".join(f"  {test_id}: " + _attempt(test_id, lambda: text(test_id)[:limit])
                     for test_id in ("stMain", "stSidebar"))


def _server_threads(page, name: str) -> str:
    """The app's threads in the Streamlit server behind ``page`` (faulthandler's
    dump on SIGUSR1, see LAUNCH): the threads with a frame in this repository,
    and the path of the whole dump."""
    proc = next((p for url, p in _SERVERS.items() if page.url.startswith(url)), None)
    if proc is None or proc.poll() is not None:
        return "(the server is not running)"
    log = ARTIFACTS / "streamlit.log"
    start = log.stat().st_size
    proc.send_signal(signal.SIGUSR1)
    time.sleep(1.0)
    dump = log.read_bytes()[start:].decode("utf-8", "replace")
    path = ARTIFACTS / f"{name}_threads.txt"
    path.write_text(dump)
    app_code = tuple(f'File "{ROOT / part}' for part in ("app.py", "app_pages", "synth_core"))
    ours = [t for t in re.split(r"\n(?=(?:Current thread|Thread) 0x)", dump)
            if any(frame in t for frame in app_code)]
    return f"whole dump: {path}\n" + ("\n".join(ours) or "no thread is in the app's code: "
                                       "no script run and no job is going")


def _diagnosis(page, name: str, what: str) -> str:
    """A timed-out wait's failure message: what the page shows (text, screenshot,
    whether a script run is going), the server's threads, and what a fresh script
    run of the same session shows after a reload (the job's state on the server:
    running, finished or failed)."""
    shot = ARTIFACTS / f"{name}_timeout.png"

    def screenshot():
        page.screenshot(path=str(shot), full_page=True)
        return shot
    state = _attempt("script state", lambda: page.get_by_test_id("stApp").get_attribute(
        "data-test-script-state", timeout=5_000))
    lines = [f"timed out waiting for {what}",
             f"load average: {Path('/proc/loadavg').read_text().strip()}; script state: "
             f"{state}; screenshot: {_attempt('screenshot', screenshot)}",
             "page:", _page_text(page), "server threads: " + _attempt(
                 "thread dump", lambda: _server_threads(page, name))]

    def reload():
        page.reload()
        page.get_by_test_id("stMain").wait_for(timeout=30_000)
        _idle(page)
        return _page_text(page)
    lines.append("after a reload (a fresh script run of the same session):\n"
                 + _attempt("reload", reload))
    return "\n".join(lines)


def _wait_for_text(page, text, timeout: float, name: str) -> None:
    """Wait until ``text`` shows; on a timeout fail with :func:`_diagnosis` (a
    page that never shows it tells why: a job that hangs, failed, or finished
    without the page learning of it)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.get_by_text(text).first.wait_for(timeout=timeout)
    except PlaywrightTimeout:
        raise AssertionError(_diagnosis(page, name, f"{text!r} ({timeout / 1000:g} s)")) from None


def _save_settings(page) -> None:
    """Press Save settings once the page is idle (a click while the page is
    still re-rendering from the previous widget change can be dropped), then
    expect "Settings saved."."""
    from playwright.sync_api import expect

    _idle(page)
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_text("Settings saved.")).to_be_visible(timeout=30_000)


def _research_three_rounds(page) -> None:
    """On the Workload and budget page: research mode with seed 0, 3 rounds,
    20 fit iterations per round and 50 final ones, saved; the sidebar shows
    JAM-PGM in research mode."""
    page.get_by_text("Research (seeded, continuous Gaussian, reproducible)").click()
    page.get_by_text("switch to research mode with seed 0").wait_for()
    _idle(page)                                      # the mode's rerun is over: the form stays
    page.get_by_text("Default rounds").click()
    page.get_by_text("Default fit iterations").click()
    for label, value in (("Rounds T", "3"), ("Fit iterations per round", "20"),
                         ("Final fit iterations", "50")):
        box = page.get_by_label(label, exact=True)
        box.fill(value)
        box.press("Tab")
    _save_settings(page)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("jam-pgm").wait_for()
    sidebar.get_by_text("research (seed 0)").wait_for()


def _filter_values(page):
    """The Public information page's box of the row filter's values."""
    return page.get_by_test_id("stMultiSelect").filter(
        has_text="Rows with one of these values are public")


def _choose_option(page, box, value: str, attempts: int = 3) -> None:
    """Open ``box`` and click its option ``value``. A rerun that re-mounts the
    widget while its list is open closes the list; then open it again (as a
    user would), at most ``attempts`` times."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(attempts):
        _idle(page)
        box.click()
        try:
            page.get_by_role("option", name=value, exact=True).click(timeout=10_000)
            return
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    raise AssertionError(f"the option {value!r} never appeared in the list")


def _use_value_filter(page, column: str, value: str) -> None:
    """On the Public information page, make the rows whose ``column`` (the
    filter's first column, shown by default) is ``value`` public with a filter."""
    _goto(page, "Public information")
    page.get_by_text("A filter on the loaded table").click()
    _idle(page)
    values = _filter_values(page)
    values.wait_for()
    _choose_option(page, values, value)
    page.keyboard.press("Escape")
    _idle(page)
    page.get_by_role("button", name="Use this filter").click()
    page.get_by_text(f"Rows where {column} is one of {value} are public.").wait_for()


def _use_first_class_filter(page) -> None:
    """On the Public information page, make titanic's 1st-class rows public with a filter."""
    _use_value_filter(page, "pclass", "1st")


def test_main_path(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 2200}, accept_downloads=True)
    page.set_default_timeout(30_000)
    page.goto(server)
    page.get_by_text("Start from a bundled sample").wait_for(timeout=60_000)
    _shot(page, "01_start")

    # one click loads the Titanic sample (private + public table + declared schema)
    page.get_by_role("button", name="Load titanic", exact=True).click()
    page.get_by_text("Loaded sample 'titanic'").wait_for()
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("titanic:private").wait_for()

    _goto(page, "Data")
    page.get_by_text("Domain source: declared").wait_for()
    page.get_by_text("Has a missing-value code").wait_for()
    page.get_by_role("button", name="Download schema.json").wait_for()
    _shot(page, "02_data")

    # public rows: the sample's public table is marked public; the curator panel shows
    _goto(page, "Public information")
    page.get_by_text("public table 'public.csv' (301 rows)").first.wait_for()
    page.get_by_text("CURATOR-ONLY, not releasable").first.wait_for()
    _shot(page, "03_public")

    # small settings so the run takes seconds; research mode, seed 0 (the same rounds every time)
    _goto(page, "Workload and budget")
    # let the page's first (cold, slow) run finish before touching a widget: a click
    # during it can make the browser mount the budget form afresh, at the widgets'
    # defaults (the saved settings since the fix; they were the minimums before)
    page.get_by_role("button", name="Save settings").wait_for()
    page.get_by_text("What-if preview (zero privacy cost)").wait_for()
    _research_three_rounds(page)
    _shot(page, "04_workload")

    _goto(page, "Run")
    page.get_by_role("button", name="Start run").click()
    # rounds appear live: progress text, then the finished run
    page.get_by_text(re.compile(r"round [0-3] / 3")).first.wait_for(timeout=60_000)
    _shot(page, "05_run_live")
    _wait_for_text(page, "Finished in", 120_000, "06_run")
    page.get_by_text("round 3 / 3").first.wait_for()
    table = page.get_by_test_id("stDataFrame").first
    table.wait_for()
    page.get_by_text("CURATOR-ONLY, not releasable").first.wait_for()
    # the chosen-marginal chart labels every round public or private
    legend = page.locator(".legendtext").filter(has_text=re.compile(r"^(public|private)$"))
    legend.first.wait_for()
    _shot(page, "06_run_finished")

    _goto(page, "Release")
    button = page.get_by_role("button", name="Synthetic data (CSV)")
    button.wait_for()
    page.get_by_text("This release satisfies").wait_for()
    _shot(page, "07_release")

    with page.expect_download() as dl:
        button.click()
    csv_path = dl.value.path()
    assert dl.value.suggested_filename == "run1-synthetic.csv"   # two runs' files stay apart
    synthetic = pd.read_csv(csv_path)
    assert list(synthetic.columns) == ["pclass", "survived", "sex", "age", "sibsp", "parch"]
    assert len(synthetic) == 1008
    with page.expect_download() as dl:
        page.get_by_role("button", name="Report (JSON)").click()
    report = json.loads(Path(dl.value.path()).read_text())
    assert report["config"]["mechanism"] == "jam-pgm"
    assert report["config"]["rounds"] == 3
    assert report["privacy"]["mode"] == "research" and "seed" not in report["config"]
    assert {e["source"] for e in report["rounds"]} <= {"public", "private"}
    assert len(report["rounds"]) == 3
    assert not CURATOR_KEYS & set(all_keys(report))

    # compare two mechanisms over the default epsilon grid, one seed each
    _goto(page, "Compare")
    seeds = page.get_by_label("Seeds per setting", exact=True)
    seeds.fill("1")
    seeds.press("Tab")
    page.get_by_role("button", name="Start comparison").click()
    _wait_for_text(page, "Comparison finished: 6 runs.", 180_000, "08_compare")
    page.get_by_role("button", name="CURATOR-ONLY results (Parquet)").wait_for()
    _shot(page, "08_compare")

    # mark public rows with a filter on the loaded table
    _use_first_class_filter(page)
    sidebar.get_by_text("rows where pclass in {1st}").wait_for()
    _shot(page, "09_public_filter")
    page.close()


def test_stop_button_works_while_running(server, browser):
    """A long run (default: 30 rounds on Adult) stays stoppable from the page."""
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.set_default_timeout(30_000)
    page.goto(server)
    # Adult, not titanic: titanic's 30 rounds finish within a poll or two
    page.get_by_role("button", name="Load adult-pub025", exact=True).click()
    page.get_by_text("Loaded sample 'adult-pub025'").wait_for(timeout=60_000)
    _goto(page, "Run")
    page.get_by_role("button", name="Start run").click()
    page.get_by_text(re.compile(r"round [1-9] / 30")).first.wait_for(timeout=60_000)
    # the page keeps polling: the sidebar and the nav stay usable, and Stop works
    page.get_by_role("button", name="Stop").click()
    page.get_by_text(re.compile(r"Stopped after round \d+")).wait_for(timeout=60_000)
    _shot(page, "10_run_stopped")
    page.get_by_role("button", name="Start run").wait_for()
    assert page.get_by_role("button", name="Start run").is_enabled()
    page.close()


def _token(page) -> str:
    """The session token in the page's URL (put back after every navigation)."""
    page.wait_for_url(re.compile(r"[?&]session=[A-Za-z0-9_-]{22,}"))
    return parse_qs(urlparse(page.url).query)["session"][0]


def test_reload_keeps_the_session_and_its_run(server, browser):
    """A reload is a new Streamlit session: the token in the URL finds the same
    Workbench, with its run still going. Another browser does not; a made-up
    token gets a fresh session and a notice. The token is never logged."""
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.set_default_timeout(30_000)
    page.goto(server)
    # Adult, not titanic: titanic's 30 rounds finish within a poll or two
    page.get_by_role("button", name="Load adult-pub025", exact=True).click()
    page.get_by_text("Loaded sample 'adult-pub025'").wait_for(timeout=60_000)
    token = _token(page)
    _goto(page, "Run")                               # navigation keeps the token in the URL
    assert _token(page) == token and urlparse(page.url).path.endswith("/run")
    page.get_by_text("mode: release (OpenDP discrete Gaussian").wait_for()
    page.get_by_role("button", name="Start run").click()
    page.get_by_text(re.compile(r"round [1-9] / 30")).first.wait_for(timeout=60_000)

    page.reload()
    page.get_by_role("heading", name="Run", exact=True).wait_for(timeout=60_000)
    page.get_by_role("heading", name=re.compile(r"^Running: JAM-PGM")).wait_for()
    page.get_by_text(re.compile(r"round ([1-9]|[12][0-9]) / 30")).first.wait_for()
    page.get_by_test_id("stSidebar").get_by_text("adult-pub025:private", exact=True).wait_for()
    assert _token(page) == token
    assert page.get_by_text("earlier session expired").count() == 0
    # the reloaded page controls the run: Stop works (and frees the shared cores)
    page.get_by_role("button", name="Stop").click()
    page.get_by_text(re.compile(r"Stopped after round \d+")).wait_for(timeout=60_000)

    other = browser.new_page()                       # another browser: its own, empty session
    other.set_default_timeout(30_000)
    other.goto(server)
    other.get_by_test_id("stSidebar").get_by_text("none loaded").wait_for(timeout=60_000)
    assert _token(other) != token
    other.goto(f"{server}/run?session=made-up-{token[:8]}-and-more")
    other.get_by_text("Your earlier session expired").wait_for(timeout=60_000)
    other.get_by_test_id("stSidebar").get_by_text("none loaded").wait_for()
    assert _token(other) != token
    other.close()
    page.close()
    assert token not in (ARTIFACTS / "streamlit.log").read_text()


def test_reload_shows_the_active_public_row_filter(server, browser):
    """After a reload the browser mounts the Public information page afresh: the
    filter's column and values show the filter in use (not an empty box under a
    header that says it is active), and the sidebar counts private and public rows."""
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.set_default_timeout(30_000)
    page.goto(server)
    page.get_by_role("button", name="Load titanic", exact=True).click()
    page.get_by_text("Loaded sample 'titanic'").wait_for(timeout=60_000)
    _use_first_class_filter(page)
    counts = re.compile(r"Under the public-row filter: \d[\d,]* private, \d[\d,]* public rows")
    page.get_by_test_id("stSidebar").get_by_text(counts).wait_for()

    page.reload()
    page.get_by_role("heading", name="Public information", exact=True).wait_for(timeout=60_000)
    _idle(page)
    page.get_by_text(re.compile(r"\d+ rows where pclass in \{1st\}")).first.wait_for()
    assert page.get_by_role("radio", name="A filter on the loaded table").is_checked()
    _filter_values(page).get_by_text("1st", exact=True).wait_for()
    page.get_by_test_id("stSidebar").get_by_text(counts).wait_for()
    _shot(page, "11_public_filter_after_reload")
    page.close()
