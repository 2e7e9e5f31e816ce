"""The oracle is privileged and labelled so: it refuses to act without the hidden-market handle
that only the in-process runner gives, the runner gives it to privileged agents alone, and
nothing it reads ever reaches an agent through a tool."""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path
from typing import Any

import pytest

from merchantbench.agents import registry
from merchantbench.agents.base import AgentSettings, BaseAgent
from merchantbench.agents.oracle import OracleAgent, PrivilegeError
from merchantbench.agents.registry import AgentConfigError, AgentEntry, make_agent
from merchantbench.catalog.market import Market
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.session import Session
from merchantbench.surface import AgentSurface

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from store_market import new_session  # noqa: E402
from test_hidden_fields import future_hours, scan  # noqa: E402

SHORT = load_scenario("smoke", overrides=["clock.days=3"])


def test_the_oracle_is_built_only_with_the_hidden_market():
    with pytest.raises(AgentConfigError, match="privileged"):
        make_agent("oracle")
    session = new_session()
    with pytest.raises(AgentConfigError, match="not privileged"):
        make_agent("expert", hidden_market=session.market)
    oracle = make_agent("oracle", hidden_market=session.market)
    assert isinstance(oracle, OracleAgent) and OracleAgent.privileged


def test_a_checkpointed_oracle_holds_no_market_and_refuses_to_act_without_it():
    session = new_session()
    oracle = pickle.loads(pickle.dumps(make_agent("oracle", hidden_market=session.market)))
    with pytest.raises(PrivilegeError):
        oracle.act(session.surface)
    assert session.trace == []  # not even a read before refusing
    oracle.attach_hidden_market(session.market)
    oracle.act(session.surface)
    assert session.window == 1


def test_the_run_record_labels_the_oracle_privileged(tmp_path):
    metrics = run_agent(RunSpec("oracle", SHORT, 1), tmp_path / "run")
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["agent"]["name"] == "oracle" and meta["agent"]["privileged"] is True
    assert metrics["orders"] > 0  # with the runner's handle it trades


HANDED: list[Market | None] = []  # what the recorders were built with, one per run


class Recorder(BaseAgent[AgentSettings]):
    """An agent that records whether its factory handed it the hidden market."""

    name = "recorder"

    def __init__(self, config: AgentSettings | None = None, **hidden: Any) -> None:
        super().__init__(config)
        HANDED.append(hidden.get("hidden_market"))

    def act(self, surface: AgentSurface) -> None:
        surface.call("end_of_step", {})


class PrivilegedRecorder(Recorder):
    privileged = True


class InlineEntry(AgentEntry):
    """A table entry for a class defined in this test module."""

    def __init__(self, cls: type[BaseAgent], privileged: bool) -> None:
        super().__init__("tests:inline", "a test agent", privileged)
        object.__setattr__(self, "cls", cls)

    def load(self) -> type[BaseAgent]:
        return self.cls  # type: ignore[attr-defined,no-any-return]


@pytest.mark.parametrize("factory", [Recorder, PrivilegedRecorder])
def test_the_runner_hands_the_market_to_privileged_agents_only(tmp_path, monkeypatch, factory):
    monkeypatch.setitem(registry.AGENTS, "recorder", InlineEntry(factory, factory.privileged))
    HANDED.clear()
    run_agent(RunSpec("recorder", SHORT, 1), tmp_path / "run")
    assert len(HANDED) == 1
    assert (HANDED[0] is not None) == factory.privileged
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["agent"].get("privileged", False) == factory.privileged


class Listener:
    """Passes an agent's calls to the session and keeps every answer with the hours still to
    come when it was given."""

    def __init__(self, session: Session) -> None:
        self.session, self.answers = session, []

    def call(self, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        future = future_hours(self.session)
        answer = self.session.call(tool, args)
        self.answers.append((tool, answer, future))
        return answer


def test_no_tool_answer_reveals_what_the_oracle_reads():
    session = new_session()
    listener = Listener(session)
    oracle = make_agent("oracle", hidden_market=session.market)
    while session.engine.t < 130:
        oracle.act(listener)  # type: ignore[arg-type]
    tools = {tool for tool, _, _ in listener.answers}
    assert {"list_product", "adjust_price", "get_store_snapshot"} <= tools
    for tool, answer, future in listener.answers:
        try:
            scan(answer, future)
        except AssertionError as exc:
            raise AssertionError(f"{tool}: {exc}") from None


def test_no_tool_offers_a_way_to_the_hidden_market():
    session = new_session()
    schemas = json.dumps(session.tool_schemas()).lower()
    for word in ("oracle", "privileged", "p_ref", "elasticity", "hazard", "is_trap"):
        assert word not in schemas
    assert "oracle" not in {t["function"]["name"] for t in session.tool_schemas()}
