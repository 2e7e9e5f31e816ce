"""Records of LLM agents played against the scripted OpenAI-compatible server verify: the
`react` harness (with a model that misbehaves and windows closed by force, and the `hermes`
harness with its framework tools), and the real Hermes Agent through its MCP gateway."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hermes_agent import KEY, hermes_env, store_policy  # noqa: F401 (a fixture)

from merchantbench.agents.llm.scripted_policy import POLICIES
from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.replay import verify_record
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario

SHORT = load_scenario("smoke", overrides=["clock.days=3"])


def _trace(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]


@pytest.mark.parametrize(("agent", "policy"), [("react", "store"), ("react", "silent"),
                                               ("hermes", "store")])  # fmt: skip
def test_a_scripted_llm_run_verifies(tmp_path: Path, agent: str, policy: str) -> None:
    run_dir = tmp_path / "run"
    with ScriptedServer(POLICIES[policy]) as server:
        settings = {"model": "scripted", "base_url": server.base_url}
        run_agent(RunSpec(agent, SHORT, 1, settings), run_dir)
    trace = _trace(run_dir)
    if policy == "silent":
        assert all(e["forced"] for e in trace if e["tool"] == "end_of_step")
    report = verify_record(run_dir)
    assert report.ok and report.windows == 6, report.summary()


@pytest.mark.requires("bwrap")
def test_a_hermes_agent_run_verifies(tmp_path: Path, monkeypatch, hermes_env) -> None:  # noqa: F811
    monkeypatch.setenv("MB_TEST_HERMES_KEY", KEY)
    run_dir = tmp_path / "run"
    with ScriptedServer(store_policy) as server:
        settings = {"model": "scripted", "base_url": server.base_url}
        settings["api_key_env"] = "MB_TEST_HERMES_KEY"
        scenario = load_scenario("smoke", overrides=["clock.days=2"])
        run_agent(RunSpec("hermes-agent", scenario, 1, settings), run_dir)
    assert any(e["origin"] == "framework" for e in _trace(run_dir))  # Hermes' own memory tool
    report = verify_record(run_dir)
    assert report.ok and report.windows == 4, report.summary()
