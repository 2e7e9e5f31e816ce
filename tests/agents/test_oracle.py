"""The oracle is privileged and labelled so: it refuses to act without the hidden-market handle
that only the in-process runner gives, the runner gives it to privileged agents alone, and
nothing it reads ever reaches an agent through a tool."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from merchantbench.agents import base
from merchantbench.agents.base import make_agent
from merchantbench.agents.oracle import OracleAgent, PrivilegeError
from merchantbench.catalog.market import Market
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.session import Session

sys.path.insert(0, str(Path(__file__).parents[1] / "tools"))
from store_market import new_session  # noqa: E402
from test_hidden_fields import future_hours, scan  # noqa: E402

SHORT = load_scenario("smoke", overrides=["clock.days=3"])


def test_the_oracle_refuses_to_act_without_the_runners_market():
    oracle, session = make_agent("oracle"), new_session()
    with pytest.raises(PrivilegeError):
        oracle.act(session)
    assert session.trace == []  # not even a read before refusing
    assert isinstance(oracle, OracleAgent) and OracleAgent.privileged


def test_the_run_record_labels_the_oracle_privileged(tmp_path):
    metrics = run_agent(RunSpec("oracle", SHORT, 1), tmp_path / "run")
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["agent"]["name"] == "oracle" and meta["agent"]["settings"]["privileged"] is True
    assert metrics["orders"] > 0  # with the runner's handle it trades


HANDED: list[Market | None] = []  # what the runner passed to the recorders' act, in order


class Recorder:
    """An agent that records what the runner passes to `act`."""

    name = "recorder"
    privileged = False

    def settings(self) -> dict[str, Any]:
        return {}

    def act(self, session: Session, market: Market | None = None) -> None:
        HANDED.append(market)
        session.call("end_of_step", {})


class PrivilegedRecorder(Recorder):
    privileged = True


@pytest.mark.parametrize("factory", [Recorder, PrivilegedRecorder])
def test_the_runner_hands_the_market_to_privileged_agents_only(tmp_path, monkeypatch, factory):
    monkeypatch.setitem(base._FACTORIES, "recorder", factory)
    HANDED.clear()
    run_agent(RunSpec("recorder", SHORT, 1), tmp_path / "run")
    assert len(HANDED) == SHORT.clock.windows
    assert {market is not None for market in HANDED} == {factory.privileged}


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
    listener, oracle = Listener(session), make_agent("oracle")
    while session.engine.t < 130:
        oracle.act(listener, market=session.market)  # type: ignore[arg-type]
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
