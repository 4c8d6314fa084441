"""``synth whatif``: the what-if preview on the command line (real stand-in runs)."""

from __future__ import annotations

import json

from synth_core.budget import BudgetAccount
from synth_core.cli import main
from synth_core.report import check_release
from synth_core.workbench import Workbench

SMALL = ["--rounds", "3", "--fit-iters", "10", "--final-fit-iters", "20", "--workload", "all-2way"]


def test_whatif_predicts_both_kinds_says_what_it_rests_on_and_spends_nothing(tmp_path, capsys):
    wb = Workbench()
    wb.load_sample("titanic")
    account = wb.set_dataset_budget(1.0, 1e-9)     # the table's account: must stay untouched
    out = tmp_path / "whatif.json"
    assert main(["whatif", "--sample", "titanic", "--mechanism", "jam-pgm", "mwem-pgm",
                 "--epsilons", "0.1", "10", *SMALL, "--out", str(out),
                 "--target-error", "1.99"]) == 0
    captured = capsys.readouterr()
    printed = captured.out
    # progress names each run (helper-58: lines were skipped and said only "run 2 of 27")
    assert "synth: stand-in run 1 of 4: " in captured.err
    assert "JAM-PGM at epsilon 0.1, seed 0" in captured.err
    rows = [line.split() for line in printed.splitlines()
            if line.startswith(("JAM-PGM ", "MWEM+PGM "))]
    assert [(r[0], r[1], r[-1]) for r in rows] == [
        ("JAM-PGM", "0.1", "measured"), ("JAM-PGM", "10", "measured"),
        ("MWEM+PGM", "0.1", "measured"), ("MWEM+PGM", "10", "measured")]
    assert "What the prediction for JAM-PGM is based on" in printed
    assert "Ranking mechanisms on this stand-in" in printed      # both kinds on public rows
    assert "No privacy budget was spent" in printed
    assert "0.56 to 1.36 times the default stand-in's prediction" in printed
    assert "MWEM+PGM: epsilon 0.1 is the smallest on this grid predicted to reach a workload " \
           "error of 1.99" in printed
    block = json.loads(out.read_text())
    check_release(block)
    assert [c["mechanism"] for c in block["what_if"]] == ["jam-pgm", "mwem-pgm"]
    assert all(len(c["points"]) == 2 and c["rho_spent"] == 0.0 for c in block["what_if"])
    # the printed figures are the file's
    assert float(rows[0][2]) == round(block["what_if"][0]["points"][0]["predicted_error"], 4)
    assert BudgetAccount.open(account.path).charges == []


def test_whatif_refuses_what_it_cannot_predict_and_names_a_missing_file(tmp_path, capsys):
    assert main(["whatif", "--sample", "titanic", "--mechanism", "public-only",
                 "--epsilons", "1"]) == 2
    assert "No what-if for public-only" in capsys.readouterr().err
    assert main(["whatif", "--data", str(tmp_path / "nope.csv"), "--mechanism", "aim",
                 "--epsilons", "1"]) == 2
    assert "--data: file" in capsys.readouterr().err
    # a mechanism the inputs do not fit: the command line's own flags, not a page's controls
    assert main(["whatif", "--sample", "titanic", "--no-public", "--mechanism", "jam-pgm",
                 "--epsilons", "1"]) == 2
    err = capsys.readouterr().err
    assert "--public PATH or --public-flag COLUMN" in err and "page" not in err
    # an output that would replace an input is refused before any stand-in runs
    private = tmp_path / "p.csv"
    private.write_text("a,b\n1,2\n")
    assert main(["whatif", "--data", str(private), "--mechanism", "aim", "--epsilons", "1",
                 "--out", str(private)]) == 2
    assert "unsupported file type" in capsys.readouterr().err
    assert private.read_text() == "a,b\n1,2\n"
    # a folder is named as one, as input and as output (helper-58: "not found")
    for args, said in ((["--data", str(tmp_path)], f"--data: '{tmp_path}' is a folder"),
                       (["--sample", "titanic", "--out", str(tmp_path)], "it is a folder")):
        assert main(["whatif", *args, "--mechanism", "aim", "--epsilons", "1"]) == 2
        assert said in capsys.readouterr().err
    # an assumed row count where the row count is known, or one below 1: said, not ignored
    assert main(["whatif", "--sample", "titanic", "--mechanism", "aim", "--epsilons", "1",
                 "--assumed-n", "500"]) == 2
    assert "applies only under unbounded DP without public rows" in capsys.readouterr().err
    assert main(["whatif", "--sample", "titanic", "--mechanism", "aim", "--epsilons", "1",
                 "--target-error", "3"]) == 2
    assert "between 0 and 2" in capsys.readouterr().err
    # the stand-ins are that long: a count past the bound was a 7 TiB allocation's traceback
    from synth_core.workbench.what_if import ASSUMED_N_RANGE, DEFAULT_ASSUMED_N
    for n in (0, ASSUMED_N_RANGE[0] - 1, ASSUMED_N_RANGE[1] + 1, 10 ** 12):
        assert main(["whatif", "--sample", "titanic", "--no-public", "--neighbours", "unbounded",
                     "--mechanism", "aim", "--epsilons", "1", "--assumed-n", str(n)]) == 2
        err = capsys.readouterr().err
        assert f"from {ASSUMED_N_RANGE[0]:,} to {ASSUMED_N_RANGE[1]:,}, not {n}" in err
        assert "Traceback" not in err
    # no count given: the basis says the default was used, not that the user assumed it
    from synth_core.workbench import Workbench
    wb = Workbench()
    wb.load_sample("titanic")
    wb.clear_public_rows()
    wb.update_settings(neighbours="unbounded")
    assert "1,000, the default row count (none was given" in wb._what_if_basis().n_note
    assert "1,200, a row count you assumed" in wb._what_if_basis(1200).n_note
    from synth_core.cli import build_parser
    help_text = " ".join(build_parser()._subparsers._group_actions[0].choices["whatif"]
                         .format_help().split())
    assert (f"{ASSUMED_N_RANGE[0]:,} to {ASSUMED_N_RANGE[1]:,} (default {DEFAULT_ASSUMED_N:,})"
            in help_text)


def test_the_help_names_every_stand_in_and_imports_nothing_heavy():
    import subprocess
    import sys

    from synth_core.whatif import STANDINS
    code = ("import sys; from synth_core.cli import build_parser; "
            "p = build_parser(); print('synth_core.api' in sys.modules, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]      # synth --help stays fast
    from synth_core.cli import build_parser
    sub = build_parser()._subparsers._group_actions[0].choices["whatif"]
    text = sub.format_help()
    assert all(name in text for name in STANDINS)
