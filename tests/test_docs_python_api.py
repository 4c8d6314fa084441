"""docs/python_api.md runs as written (its code blocks, in order, in one namespace)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "python_api.md"


def code_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_every_block_compiles_and_its_imports_resolve():
    """The fast check of the page: its blocks are Python and every name they
    import exists (the walkthrough below runs them)."""
    blocks = code_blocks(DOC.read_text(encoding="utf-8"))
    imports = [line for block in blocks for line in block.splitlines()
               if re.match(r"(from \S+ )?import ", line)]
    assert any("synth_core" in line for line in imports)
    for i, block in enumerate(blocks):
        compile(block, f"{DOC.name} block {i + 1}", "exec")
    exec("\n".join(imports), {})


@pytest.mark.slow   # every block, runs and all
def test_the_python_api_walkthrough_runs(capsys):
    blocks = code_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    namespace: dict = {}
    for i, block in enumerate(blocks):
        if i == 0:   # fewer rounds than the page's default keeps the suite fast
            block = block.replace("ROUNDS = 30", "ROUNDS = 3")
            assert "ROUNDS = 3 " in block
        exec(compile(block, f"{DOC.name} block {i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    result = namespace["result"]
    assert namespace["picks"]["public"] + namespace["picks"]["private"] == 3
    assert "round   3" in out and "workload error" in out
    assert result.ledger.spent <= result.ledger.total
    assert namespace["res"].report["conditional_generation"]["conditioned_on"] == ["pclass", "sex"]
    account = namespace["account"]
    assert account.spent == pytest.approx(namespace["first"].ledger.spent)   # the refused run: nothing
    assert "left" in namespace["refusal"] and len(account.charges) == 1
