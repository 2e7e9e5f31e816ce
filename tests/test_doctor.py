"""`merchantbench doctor` and the tests' `requires` marker share one list of optional parts
(`merchantbench.optional_parts`): each says whether it is here and how to add it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from merchantbench.cli import app
from merchantbench.optional_parts import PARTS, REQUIRE_ALL_ENV
from requires import missing, need

ALL = (
    "bwrap",
    "chromium",
    "hermes-agent",
    "ray",
    "inspect",
    "openenv",
    "pettingzoo",
    "verifiers",
    "trl",
    "sb3",
)


def test_doctor_lists_every_part_and_exits_0():
    result = CliRunner().invoke(app, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    parts = {p["part"]: p for p in json.loads(result.output)["parts"]}
    assert tuple(parts) == ALL == tuple(PARTS)
    for key, row in parts.items():
        assert row["present"] == (PARTS[key].locate() is not None)
        assert row["install"] == PARTS[key].install and row["needed_for"]


def test_a_missing_part_is_named_with_how_to_add_it(monkeypatch, tmp_path):
    monkeypatch.setenv("MERCHANTBENCH_CHROMIUM", str(tmp_path / "no-chromium"))
    monkeypatch.setenv("MERCHANTBENCH_HERMES_DIR", str(tmp_path / "hermes"))
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == len(PARTS)
    chromium = next(line for line in lines if "Chromium" in line)
    assert chromium.startswith("missing") and "apt-get install chromium" in chromium
    hermes = next(line for line in lines if "Hermes Agent" in line)
    assert hermes.startswith("missing") and "--agent hermes-agent" in hermes


def test_a_damaged_hermes_marker_counts_as_not_made(monkeypatch, tmp_path):
    from merchantbench.agents.hermes_agent.env import HERMES_VERSION, find_env

    monkeypatch.setenv("MERCHANTBENCH_HERMES_DIR", str(tmp_path))
    env = tmp_path / f"env-{HERMES_VERSION}"
    env.mkdir()
    (env / "merchantbench-env-2.json").write_bytes(b"\xff{not json")
    assert find_env() is None
    assert PARTS["hermes-agent"].locate() is None


def test_a_missing_part_skips_and_under_ci_fails(monkeypatch, tmp_path):
    monkeypatch.setenv("MERCHANTBENCH_CHROMIUM", str(tmp_path / "no-chromium"))
    monkeypatch.delenv(REQUIRE_ALL_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="needs Chromium: apt-get install chromium"):
        need("chromium")
    monkeypatch.setenv(REQUIRE_ALL_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=REQUIRE_ALL_ENV):
        need("chromium")
    with pytest.raises(pytest.fail.Exception, match="index unreachable"):
        missing("hermes-agent", "index unreachable")


def test_a_present_part_goes_on(monkeypatch, tmp_path):
    chromium = tmp_path / "chromium"
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    monkeypatch.setenv("MERCHANTBENCH_CHROMIUM", str(chromium))
    monkeypatch.setenv(REQUIRE_ALL_ENV, "1")
    need("chromium")  # neither skips nor fails
    chromium.chmod(0o644)  # there but not executable: missing
    assert PARTS["chromium"].locate() is None
