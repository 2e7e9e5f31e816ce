"""The agent table: names, lazy loading, settings models and their one-line errors."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from merchantbench.agents.base import AgentSettings, BaseAgent
from merchantbench.agents.registry import (
    AGENTS,
    AgentConfigError,
    agent_names,
    agent_settings_model,
    check_settings,
    make_agent,
)
from merchantbench.cli import app


def test_every_entry_loads_a_base_agent_with_a_frozen_settings_model():
    assert agent_names() == sorted(
        [
            "idle",
            "random",
            "rule-based",
            "expert",
            "oracle",
            "react",
            "hermes",
            "hermes-agent",
            "fail-decay",
            "fail-decay-rb",
            "fail-abandon",
            "fail-abandon-rb",
            "fail-narrow",
            "fail-stop-sourcing",
            "fail-stop-sourcing-rb",
            "fail-flat-prices",
            "fail-no-risk-response",
            "fail-no-rating-repricing",
        ]  # fmt: skip
    )
    for name, entry in AGENTS.items():
        try:
            cls = entry.load()
        except ModuleNotFoundError as missing:  # an optional extra not installed here
            assert (name, missing.name) == ("inspect", "inspect_ai"), missing
            continue
        assert issubclass(cls, BaseAgent) and cls.name == name
        assert issubclass(cls.Settings, AgentSettings)
        assert cls.privileged == entry.privileged == (name == "oracle")
        defaults = cls.Settings()
        with pytest.raises(ValidationError):
            defaults.__setattr__(next(iter(cls.Settings.model_fields), "x"), 1)


def test_agents_are_imported_only_when_first_needed():
    code = (
        "import sys, merchantbench.agents.registry as r\n"
        "before = 'merchantbench.agents.llm.react' in sys.modules\n"
        "r.agent_settings_model('idle')\n"
        "mid = 'merchantbench.agents.llm.react' in sys.modules\n"
        "r.agent_settings_model('react')\n"
        "print(before, mid, 'merchantbench.agents.llm.react' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "True"]


def test_settings_are_checked_with_one_line_errors():
    assert check_settings("rule-based", {"markup": "2.5"}).markup == 2.5  # type: ignore[attr-defined]
    with pytest.raises(AgentConfigError, match=r"^agent 'rule-based': markup: .*number"):
        check_settings("rule-based", {"markup": "abc"})
    with pytest.raises(AgentConfigError, match="nope: unknown setting"):
        make_agent("idle", {"nope": 1})
    with pytest.raises(AgentConfigError, match="unknown agent 'nobody'"):
        agent_settings_model("nobody")
    assert make_agent("rule-based", {"markup": 3}).settings()["markup"] == 3.0


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--agent", "rule-based", "--agent-opt", "markup=abc"], "markup: Input should be"),
        (["--agent", "rule-based", "--agent-opt", "nope=1"], "nope: unknown setting"),
        (["--agent", "idle", "--model", "m"], "model: unknown setting"),
        (["--agent", "nobody"], "unknown agent 'nobody'"),
    ],
)
def test_the_cli_refuses_bad_agent_settings_in_one_line(args, expected, tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "--scenario", "smoke", "--out", str(out), *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0]
    assert not out.exists()  # nothing was created before the inputs were checked


def test_list_agents_names_each_with_its_summary():
    result = CliRunner().invoke(app, ["run", "--list-agents"])
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.output.splitlines()] == agent_names()
    assert "PRIVILEGED" in result.output
