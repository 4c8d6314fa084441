"""The README's test command is the one .ci/run runs, and it runs the whole suite."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_test_command_is_the_ci_command_and_runs_the_slow_tests():
    ci_line = (ROOT / ".ci" / "run").read_text().splitlines()[6]
    assert ci_line in (ROOT / "README.md").read_text().splitlines()
    assert ci_line.endswith("-m pytest --run-slow")
