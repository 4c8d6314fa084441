"""AppTest of the Data page's schema review (no browser, no mocks)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def raw_csv(n: int = 200) -> bytes:
    """A table with a row number, a FIPS-like code column, integer ages with
    blanks and a column mixing numbers and 'NA'."""
    rng = np.random.default_rng(0)
    age = rng.integers(18, 90, n).astype(float)
    age[::9] = np.nan
    df = pd.DataFrame({"row": np.arange(n), "county_fips": rng.choice(np.arange(1001, 1200, 3), n),
                       "age": pd.array(age, dtype="Int64"), "sex": rng.choice(["F", "M"], n),
                       "score": rng.choice(["1", "2", "NA"], n)})
    buf = io.BytesIO()
    df.to_csv(buf, index=False)
    return buf.getvalue()


def data_page_with_upload() -> tuple[AppTest, object]:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    wb = at.session_state["wb"]
    wb.load_upload("raw.csv", raw_csv())
    at.switch_page("app_pages/data.py").run()
    assert not at.exception, at.exception
    return at, wb


def test_the_data_page_proposes_a_schema_and_uses_the_reviewed_one():
    at, wb = data_page_with_upload()
    key = f"review_{wb.loads}"
    markdown = "\n".join(m.value for m in at.markdown)
    assert "**Left out:** row" in markdown
    assert "**Flagged as codes (categorical):** county_fips" in markdown
    assert any("Values read off the private table" in w.value for w in at.warning)
    table = next(d.value for d in at.dataframe if "decision" in d.value.columns)
    decisions = dict(zip(table["column"], table["decision"]))
    assert decisions["row"].startswith("leave out") and decisions["age"] == "numeric"
    assert decisions["score"] == "categorical: mixed types"
    notes = dict(zip(table["column"], table["note"]))
    assert "'Leave out'" in notes["row"] and "--drop" not in notes["row"]  # the app's control
    # override: keep the code column numeric, leave 'score' out, then use the schema
    at.multiselect(key=f"{key}_numeric").set_value(["county_fips"]).run()
    at.multiselect(key=f"{key}_drop").set_value(["score"]).run()
    at.button(key=f"{key}_use").click().run()
    assert not at.exception and not [e.value for e in at.error]
    assert wb.schema.names == ("county_fips", "age", "sex")
    assert wb.schema.column("county_fips").kind == "numeric"
    assert wb.schema.column("age").missing and wb.schema.column("age").integer
    assert [c for c, _ in wb.domain.left_out] == ["row", "score"]
    assert wb.prepare().dropped == ("row", "score")     # a run leaves them out on request
    assert "--drop row,score" in wb.reproduce_command()


def test_a_choice_that_conflicts_is_shown_as_an_error_naming_the_widgets():
    at, wb = data_page_with_upload()
    key = f"review_{wb.loads}"
    at.multiselect(key=f"{key}_numeric").set_value(["sex"]).run()
    assert not at.exception
    assert any("'sex' cannot be numeric" in e.value for e in at.error)
    at.multiselect(key=f"{key}_numeric").set_value(["age"])
    at.multiselect(key=f"{key}_drop").set_value(["age"]).run()
    assert any("chosen both" in e.value for e in at.error)


def test_keeping_the_row_number_as_categories_is_warned_about_by_name():
    """Choosing 'Categorical columns' for a column with a value per row keeps it, and
    the page says that its category list is almost every record's value."""
    at, wb = data_page_with_upload()
    key = f"review_{wb.loads}"
    assert not any("One category per record" in w.value for w in at.warning)
    at.multiselect(key=f"{key}_categorical").set_value(["row"]).run()
    assert not at.exception
    warning = next(w.value for w in at.warning if "One category per record" in w.value)
    assert "(columns row)" in warning
    table = next(d.value for d in at.dataframe if "decision" in d.value.columns)
    notes = dict(zip(table["column"], table["note"]))
    assert "200 categories for 200 rows" in notes["row"] and "'Leave out'" in notes["row"]


def test_the_page_names_where_the_proposal_differs_from_the_schema_in_use():
    """Ages (about 70 distinct whole numbers) load as one category per value (at most
    100 on loading) and are proposed as 32 bins; the row number loads binned and is
    proposed left out: the page says so, column by column, before anything is used."""
    at, wb = data_page_with_upload()
    assert wb.schema.column("age").kind == "categorical"
    info = next(i.value for i in at.info if "differs from the schema in use" in i.value)
    n_age = len(wb.schema.column("age").categories)
    assert f"- age: in use categorical ({n_age} categories); proposed numeric (32 bins)" in info
    assert "- row: in use numeric (32 bins); proposed left out (identifier)" in info
    assert "sex:" not in info          # the same kind in both
