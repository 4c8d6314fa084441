"""Browser walk of an analyst's first run on a raw table, in headless Chromium.

A CSV written here (a row id, zip codes written with leading zeros, integer
ages with blanks, a colour) is uploaded on the Data page; the proposed schema
is reviewed and used (the id left out); a public-row filter on a zip code is
set; JAM-PGM runs a few rounds in research mode; the Run page shows the real
and synthetic data side by side; the Release page offers the synthetic data,
the shell script and the notebook that repeat the run. The downloaded
synthetic zips are codes of the uploaded file, written as it writes them.

Reuses test_browser's Streamlit server, Chromium and page helpers.
Screenshots go to ``$WORKBENCH_ARTIFACTS`` (default ``/tmp/workbench-artifacts``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_browser import (_goto, _idle, _research_three_rounds, _shot,  # noqa: F401
                          _use_value_filter, _wait_for_text, browser, server)

pytestmark = pytest.mark.slow   # a Streamlit server and Chromium
#: the zip codes of the raw table, as the file writes them
ZIPS = ("02134", "00501", "10001", "01002", "94103")
ROWS = 300


def write_raw_table(path: Path) -> None:
    """A raw CSV of ``ROWS`` rows: id, zip (leading zeros), age (blanks), colour."""
    rng = np.random.default_rng(7)
    zips = rng.choice(ZIPS, ROWS)
    ages = rng.integers(18, 90, ROWS)
    blank = rng.random(ROWS) < 0.1
    colours = np.where(rng.random(ROWS) < 0.4, "red", np.where(rng.random(ROWS) < 0.5,
                                                                  "green", "blue"))
    lines = ["id,zip,age,colour"]
    for i in range(ROWS):
        age = "" if blank[i] else str(ages[i])
        lines.append(f"{1000 + i},{zips[i]},{age},{colours[i]}")
    path.write_text("\n".join(lines) + "\n")


def _upload_and_use_the_proposal(page, csv: Path) -> None:
    _goto(page, "Data")
    page.locator('input[type="file"]').first.set_input_files(str(csv))
    page.get_by_text(f"Loaded '{csv.name}'").wait_for(timeout=60_000)
    page.get_by_text("Domain source: read off the private table", exact=False).first.wait_for()
    review = page.get_by_test_id("stExpander").filter(has_text="Review a proposed schema")
    review.get_by_text("Left out: id").wait_for()
    _shot(page, "walk_01_proposal")
    _idle(page)
    review.get_by_role("button", name="Use this schema").click()
    page.get_by_text("The reviewed schema is in use.").wait_for()
    page.get_by_text("Not in the schema").first.wait_for()


def _public_zip_filter(page) -> None:
    """Rows with zip 00501 are public (the option is the code as written)."""
    _use_value_filter(page, "zip", "00501")
    _shot(page, "walk_02_public")


def _jam_pgm_few_rounds(page) -> None:
    _goto(page, "Workload and budget")
    page.get_by_role("button", name="Save settings").wait_for()
    _idle(page)
    mechanism = page.get_by_test_id("stSelectbox").filter(has_text="Mechanism")
    mechanism.click()
    page.get_by_role("option", name=re.compile(r"^JAM-PGM")).first.click()
    _idle(page)
    _research_three_rounds(page)
    _shot(page, "walk_03_workload")


def _run_to_the_end(page) -> None:
    _goto(page, "Run")
    page.get_by_role("button", name="Start run").click()
    _wait_for_text(page, "Finished in", 180_000, "walk_04_run")
    page.get_by_text("round 3 / 3").first.wait_for()
    # the innermost block holding the side-by-side header and a chart: its box
    side = page.get_by_test_id("stVerticalBlock").filter(
        has_text="Real, public and synthetic data side by side").filter(
        has=page.locator(".js-plotly-plot")).last
    side.wait_for()
    for table in ("real (curator-only)", "public", "synthetic"):
        side.locator(".js-plotly-plot .legendtext").filter(
            has_text=re.compile(f"^{re.escape(table)}$")).first.wait_for()
    # the default marginal is zip: its cells are the codes as the file writes them
    side.locator(".js-plotly-plot .xtick text").filter(has_text="zip=00501").first.wait_for()
    _shot(page, "walk_04_run")


def test_walk_from_a_raw_csv_to_a_release(server, browser, tmp_path):  # noqa: F811
    csv = tmp_path / "walk.csv"
    write_raw_table(csv)
    page = browser.new_page(viewport={"width": 1400, "height": 2200}, accept_downloads=True)
    page.set_default_timeout(30_000)
    page.goto(server)
    page.get_by_text("Start from a bundled sample").wait_for(timeout=60_000)

    _upload_and_use_the_proposal(page, csv)
    _public_zip_filter(page)
    _jam_pgm_few_rounds(page)
    _run_to_the_end(page)

    _goto(page, "Release")
    page.get_by_text("This release satisfies").wait_for()
    downloads = {}
    for name in ("Synthetic data (CSV)", "Reproduce (shell)", "Reproduce (notebook)"):
        button = page.get_by_role("button", name=name)
        button.wait_for()
        with page.expect_download() as dl:
            button.click()
        downloads[name] = tmp_path / dl.value.suggested_filename
        dl.value.save_as(downloads[name])
    _shot(page, "walk_05_release")
    page.close()

    synthetic = pd.read_csv(downloads["Synthetic data (CSV)"], dtype=str, keep_default_na=False)
    assert list(synthetic.columns) == ["zip", "age", "colour"]
    assert set(synthetic["zip"]) <= set(ZIPS) and "00501" in set(synthetic["zip"])
    assert "" in set(synthetic["age"])                 # the missing code decodes to blanks
    script = downloads["Reproduce (shell)"].read_text()
    assert "synth run" in script and "jam-pgm" in script
    notebook = json.loads(downloads["Reproduce (notebook)"].read_text())
    sources = "".join("".join(c["source"]) for c in notebook["cells"])
    assert "jam-pgm" in sources.lower() or "jam_pgm" in sources.lower()
