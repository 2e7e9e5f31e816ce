"""`merchantbench check --adapter X --against python` for every front end (CI runs it here):
each passes every check and plays the script exactly as the in-process surface does."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from merchantbench.check import ADAPTERS
from merchantbench.cli import app

CHECKS = ("script", "determinism", "snapshot", "refusals", "ledger", "hidden", "agreement")


def test_every_front_end_has_an_adapter() -> None:
    assert {"python", "http", "mcp", "gym"} <= set(ADAPTERS)


@pytest.mark.parametrize("adapter", ["http", "mcp", "gym"])
def test_the_front_end_passes_the_check_against_python(adapter: str) -> None:
    result = CliRunner().invoke(app, ["check", "--adapter", adapter, "--against", "python"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"merchantbench check: adapter {adapter}, scenario smoke")
    verdicts = {line.split()[1]: line.split()[0] for line in lines[1:] if line.strip()}
    assert verdicts == dict.fromkeys(CHECKS, "PASS")
