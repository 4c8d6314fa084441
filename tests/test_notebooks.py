"""Notebooks: the bundled ones run from a clean clone, and a generated repeat
notebook repeats its run, holds no seed and cannot be made to run a column name.

Notebooks execute with nbclient on a real ipykernel kernel of this
interpreter: a kernel spec written to a temporary folder (nothing outside it
and the venv), with ``PYTHONPATH`` at the repository root.
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

from synth_core import Synthesizer, load_sample
from synth_core.errors import ConfigError
from synth_core.notebook import RunRecipe, literal, recipe_notebook
from synth_core.api import RunConfig
from synth_core.workbench.command import (CommandParts, arg, command_argv, command_recipe,
                                          reproduce_command)

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parent.parent
#: the bundled notebooks (``run_*.ipynb``: executed copies a user made, not stored)
NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").glob("*.ipynb") if not p.name.startswith("run_"))
#: a column name that would run code if it were pasted into a cell
EVIL = "flag'\"\n__import__('pathlib').Path('PWNED').touch()\n#\\"
TINY = dict(rounds=3, fit_iters=5, final_fit_iters=10, workload="all-2way")


def kernel_manager(folder: Path, scratch: Path | None = None):
    """A kernel manager for this interpreter, its spec in ``folder`` (``scratch``: the
    kernel's temporary folder, TMPDIR)."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    spec = folder / "kernels" / "synth-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "synth test", "language": "python",
        "env": {"PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu",
                **({"TMPDIR": str(scratch)} if scratch else {})}}))
    specs = KernelSpecManager(kernel_dirs=[str(spec.parent)], ensure_native_kernel=False)
    return KernelManager(kernel_name="synth-test", kernel_spec_manager=specs)


def execute(notebook: dict | Path, cwd: Path, scratch: Path | None = None):
    """Run every cell of ``notebook`` in ``cwd`` (``scratch``: the kernel's TMPDIR);
    the executed notebook."""
    nb = (nbformat.read(str(notebook), as_version=4) if isinstance(notebook, Path)
          else nbformat.from_dict(notebook))
    client = nbclient.NotebookClient(nb, km=kernel_manager(cwd / ".kernel", scratch),
                                     timeout=600,
                                     resources={"metadata": {"path": str(cwd)}})
    client.execute()
    return nb


def texts(nb, mime: str = "text/plain") -> list[str]:
    """Every output of the code cells as text (streams, and ``mime`` of displays)."""
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            out.append(o.get("text", "") if o["output_type"] == "stream"
                       else o.get("data", {}).get(mime, ""))
    return out


# ---------------------------------------------------------------- the bundled notebooks


def test_three_bundled_notebooks_are_stored_clean():
    """No outputs, no execution counts, no absolute path: they run from a clean clone."""
    assert [p.name for p in NOTEBOOKS] == ["01_quickstart.ipynb", "02_epsilon_tradeoff.ipynb",
                                           "03_whatif_and_compare.ipynb"]
    for path in NOTEBOOKS:
        nb = nbformat.read(str(path), as_version=4)
        nbformat.validate(nb)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name
                ast.parse(cell.source)
        text = path.read_text(encoding="utf-8")
        assert "/work/" not in text and "/home/" not in text and "C:\\\\" not in text


def check_charts_offline(nb) -> None:
    """Charts are drawn in the notebook (SVG): none loads scripts from the internet,
    so they show on an air-gapped machine and in a saved notebook."""
    assert any(texts(nb, "image/svg+xml")), "no chart drawn as SVG"
    assert not any("cdn.jsdelivr" in h or "<script" in h for h in texts(nb, "text/html"))


def scratch_left(scratch: Path) -> list[str]:
    """What a bundled notebook left in its kernel's temporary folder (its scratch
    folders are named ``synth-*``; the release files and the curator-only result
    store must not outlive the notebook)."""
    return sorted(p.name for p in scratch.glob("synth-*"))


@pytest.mark.slow
def test_quickstart_runs_and_keeps_curator_values_apart(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    nb = execute(NOTEBOOKS[0], tmp_path, scratch)
    html = texts(nb, "text/html")
    release = [h for h in html if "Release report" in h or "Run result" in h]
    assert release and all("This release satisfies" in h for h in release)
    assert not any("CURATOR-ONLY" in h for h in release)
    assert any("CURATOR-ONLY" in h and "workload error (true)" in h for h in html)
    assert any("round 8 of 8" in h for h in html)       # the live bar, updated to the end
    assert "'repeat.ipynb', 'report.json', 'synthetic.csv'" in "".join(texts(nb))
    assert "- still there: False" in "".join(texts(nb)) and scratch_left(scratch) == []
    check_charts_offline(nb)


@pytest.mark.slow
@pytest.mark.parametrize("index, printed, html", [
    (1, ["45 runs", "'tradeoff.png', 'tradeoff.svg'"], []),
    (2, ["9 runs, 9 finished", "rho spent on the private table: 0.0",
         "no budget account for this table"],
     ["CURATOR-ONLY comparison"]),
], ids=["teaching", "whatif-compare"])
def test_teaching_and_compare_notebooks_run(tmp_path, index, printed, html):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    nb = execute(NOTEBOOKS[index], tmp_path, scratch)
    assert "- still there: False" in "".join(texts(nb)) and scratch_left(scratch) == []
    for text in printed:
        assert text in "".join(texts(nb))
    for text in html:
        assert any(text in h for h in texts(nb, "text/html"))
    check_charts_offline(nb)
    if index == 1:   # its styled table shows 3 decimals (a Styler ignores .round: 0.984000)
        assert not re.search(r">\s*-?\d+\.\d{6}\s*<", "".join(texts(nb, "text/html")))


# ---------------------------------------------------------------- literals and recipes


def test_literal_reads_back_and_refuses_anything_else():
    for value in (EVIL, None, True, 3, 1e-9, [1, "a"], {"k": (1, 2)}, "\u2028x\x00"):
        assert ast.literal_eval(literal(value)) == value
    for bad in (float("nan"), float("inf"), object(), {1, 2}, pd.Timestamp(0), b"x"):
        with pytest.raises(TypeError):
            literal(bad)


def test_a_recipe_never_carries_the_seed():
    with pytest.raises(ValueError):
        RunRecipe({"mechanism": "jam-pgm", "seed": 1})


def code_cells(nb: dict) -> list[str]:
    return [c["source"] for c in nb["cells"] if c["cell_type"] == "code"]


def without_strings(source: str) -> str:
    """The code of ``source`` with every string constant blanked (what would run)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.unparse(tree)


def test_a_hostile_column_name_stays_a_string_in_every_cell():
    recipe = RunRecipe({"mechanism": "jam-pgm", "epsilon": 1.0}, data=EVIL + ".csv",
                       public_flag=EVIL, public_columns=(EVIL,), notes=(EVIL,),
                       plan=((1, (EVIL,), "private"),), curator_file=EVIL)
    nb = recipe_notebook(recipe)
    for source in code_cells(nb):
        assert "PWNED" not in without_strings(source)
    markdown = "".join(c["source"] for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "PWNED" not in markdown
    settings = ast.parse(next(s for s in code_cells(nb) if "PUBLIC_FLAG =" in s))
    values = {t.targets[0].id: ast.literal_eval(t.value) for t in settings.body
              if isinstance(t, ast.Assign)}
    assert values["PUBLIC_FLAG"] == EVIL and values["DATA"] == EVIL + ".csv"
    assert values["ORIGINAL_PLAN"] == [[1, [EVIL], "private"]]


def test_reproduce_command_reads_back_exactly():
    """command_argv inverts reproduce_command (quotes, newlines, backslashes,
    the continuation sequence itself inside a name)."""
    names = [EVIL, "a \\\n  b", "it's", "-dash", "x\\", "\u2028"]
    for name in names:
        parts = CommandParts(data=tuple(arg("--data", name + ".csv")),
                             public=tuple(arg("--public-flag", name)))
        s = RunConfig("jam-pgm", epsilon=0.5, rounds=4, seed=3)
        argv, notes = command_argv(reproduce_command(s, parts))
        assert argv[:2] == ["synth", "run"] and argv[-1] == "report.json"
        recipe = command_recipe(reproduce_command(s, parts))
        assert (recipe.data, recipe.public_flag) == (name + ".csv", name)
        assert recipe.config["epsilon"] == 0.5 and recipe.config["rounds"] == 4
        assert "seed" not in recipe.config and notes      # the seeded run's note


def test_to_notebook_needs_the_inputs_named(tmp_path):
    sample = load_sample("titanic")
    result = Synthesizer("public-only", epsilon=1.0, seed=0).fit(
        sample.private, sample.public, schema=sample.schema)
    with pytest.raises(ConfigError, match="sample=NAME"):
        result.to_notebook(tmp_path / "x.ipynb")
    with pytest.raises(ConfigError, match="sample=NAME"):
        result.to_notebook(tmp_path / "x.ipynb", sample="titanic", data="t.csv")


# ---------------------------------------------------------------- generated notebooks run


def seeded_titanic_run(seed: int):
    sample = load_sample("titanic")
    return Synthesizer("jam-pgm", epsilon=1.0, seed=seed, **TINY).fit(
        sample.private, sample.public, schema=sample.schema)


def settings_value(nb, name: str):
    cell = next(s for s in code_cells(nb) if f"\n{name} = " in s)
    tree = ast.parse(cell)
    return next(ast.literal_eval(a.value) for a in tree.body
                if isinstance(a, ast.Assign) and a.targets[0].id == name)


@pytest.mark.slow
def test_generated_notebook_repeats_a_seeded_run_with_the_curator_file(tmp_path):
    seed = 918_273_645
    result = seeded_titanic_run(seed)
    result.to_notebook(tmp_path / "repeat.ipynb", sample="titanic",
                       curator_file=tmp_path / "curator-seed.json")
    stored = (tmp_path / "repeat.ipynb").read_text(encoding="utf-8")
    assert str(seed) not in stored                                 # the seed: curator file only
    assert json.loads((tmp_path / "curator-seed.json").read_text())["seed"] == seed
    nb = execute(tmp_path / "repeat.ipynb", tmp_path)
    printed = "".join(texts(nb))
    assert "seeded repeat (curator file found)" in printed
    assert "same measurement plan as the original run: True" in printed
    repeated = json.loads((tmp_path / "report.json").read_text())
    assert repeated["measurements"] == json.loads(json.dumps(result.report["measurements"]))
    assert repeated["ledger"] == result.report["ledger"]
    assert any("round 3 of 3" in h for h in texts(nb, "text/html"))   # live bar at its end


@pytest.mark.slow
def test_generated_notebook_runs_a_hostile_flag_column_as_data(tmp_path):
    """A table whose file and flag column names hold code: the notebook runs the
    same plan and the code never runs."""
    sample = load_sample("titanic")
    table = pd.concat([sample.private.assign(**{EVIL: False}),
                       sample.public.assign(**{EVIL: True})], ignore_index=True)
    data_name = "ti'tanic\".csv"
    table.to_csv(tmp_path / data_name, index=False)
    (tmp_path / "schema.json").write_text(json.dumps(sample.schema.to_json()))
    result = Synthesizer("jam-pgm", epsilon=1.0, seed=5, **TINY).fit(
        str(tmp_path / data_name), schema=sample.schema, public_flag=EVIL)
    result.to_notebook(tmp_path / "repeat.ipynb", data=data_name, public_flag=EVIL,
                       schema="schema.json", curator_file=tmp_path / "seed.json")
    nb = execute(tmp_path / "repeat.ipynb", tmp_path)
    assert not (tmp_path / "PWNED").exists()
    assert "same measurement plan as the original run: True" in "".join(texts(nb))
    assert settings_value(nbformat.reads(json.dumps(nb), as_version=4), "PUBLIC_FLAG") == EVIL


@pytest.mark.slow
def test_workbench_release_notebook_matches_its_shell_script(tmp_path):
    """The Release page's notebook: read back from the run's reproduce command,
    no seed, and it runs the same settings on the same sample."""
    from synth_core.workbench import Workbench
    from synth_core.workbench.command import reproduce_notebook

    wb = Workbench()
    wb.load_sample("titanic")
    wb.update_settings(epsilon=0.5, seed=424_242, **TINY)
    wb.set_dataset_budget(5.0, 1e-9)       # the table's account, in the workbench's folder
    worker = wb.start_run()
    worker.wait(300)
    run = wb.collect()
    path = tmp_path / "reproduce.ipynb"
    path.write_bytes(reproduce_notebook(run.reproduce, run.result.report))
    assert "424242" not in path.read_text(encoding="utf-8")
    nb = execute(path, tmp_path)
    repeated = json.loads((tmp_path / "report.json").read_text())
    assert repeated["config"] == run.result.report["config"]
    assert "no seed: a new run with the same settings" in "".join(texts(nb))
    assert os.path.exists(tmp_path / "synthetic.csv")
    # the repeat found the table's account by its content and was charged to it
    assert f"charged to the table's budget account {wb.dataset_budget().label!r}" in "".join(texts(nb))
    assert len(wb.dataset_budget().charges) == 2
    # what the executed notebook keeps names the account, not its file (the fingerprint)
    kept = json.dumps(nbformat.writes(nb))
    account = wb.dataset_budget()
    assert account.path.name not in kept and account.fingerprint[:16] not in kept
    assert repeated["budget_account"]["this_run_rho"] == pytest.approx(
        repeated["privacy"]["rho_spent"])


@pytest.mark.parametrize("seed", [None, 3])
def test_the_repeat_notebook_says_whether_the_run_had_a_seed_to_keep(tmp_path, seed):
    sample = load_sample("titanic")
    result = Synthesizer("jam-pgm", epsilon=1.0, seed=seed, **TINY).fit(
        sample.private, sample.public, schema=sample.schema)
    result.to_notebook(tmp_path / "repeat.ipynb", sample="titanic")
    text = "".join("".join(c["source"]) for c in
                   json.loads((tmp_path / "repeat.ipynb").read_text())["cells"])
    assert ("it has no seed to keep" in text) == (seed is None)
    assert ("This run was seeded" in text) == (seed is not None)
    assert "spends the\ntable's budget again" in text


@pytest.mark.slow
def test_the_release_notebook_leaves_out_the_columns_the_run_left_out(tmp_path):
    """A column left out on the Data page is --drop in the script; the notebook left it
    in, spent budget on its marginals and released it (an identifier, in a helper's run)."""
    from synth_core.workbench import Workbench
    from synth_core.workbench.command import reproduce_notebook

    wb = Workbench()
    wb.load_sample("titanic")
    wb.drop_column("parch")
    wb.update_settings(epsilon=0.5, seed=5, **TINY)
    wb.start_run().wait(300)
    run = wb.collect()
    assert "--drop parch" in run.reproduce
    path = tmp_path / "reproduce.ipynb"
    path.write_bytes(reproduce_notebook(run.reproduce, run.result.report))
    (tmp_path / "schema.json").write_bytes(wb.release_files(run)["schema.json"])  # its note
    execute(path, tmp_path)
    synthetic = pd.read_csv(tmp_path / "synthetic.csv")
    repeated = json.loads((tmp_path / "report.json").read_text())
    assert "parch" not in synthetic.columns and list(synthetic.columns) == \
        list(run.result.synthetic.columns)
    assert all("parch" not in m["clique"] for m in repeated["measurements"])
