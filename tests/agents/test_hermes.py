"""The Hermes-style harness: framework tools, code through the bridge, memory and skills that
persist across windows and a resume, end to end over real HTTP against the scripted server."""

from __future__ import annotations

import asyncio
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from merchantbench.agents.llm import hermes
from merchantbench.agents.llm.hermes import REVIEW_PROMPT, HermesAgent, HermesSettings
from merchantbench.agents.llm.hermes_tools import FRAMEWORK_TOOLS, LIMITS, skill_kind
from merchantbench.agents.llm.scripted_policy import TOOL_LOOP_STEPS, tool_loop_policy
from merchantbench.agents.llm.scripted_server import ScriptedServer, script_responder
from merchantbench.catalog.cache import get_market
from merchantbench.runs.runner import CheckpointPolicy, RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.session import Session
from window_close import calls_after_close

needs_bwrap = pytest.mark.requires("bwrap")
LOCAL = {"model": "scripted", "base_url": "http://127.0.0.1:9/v1"}
CASH_SKILL = (
    "import merchantbench_tools as mt\n"
    "balance = mt.query_balance()['balance']\n"
    "{'balance': balance, 'note': args.get('note')}"
)
SEARCH_CODE = (
    "import merchantbench_tools as mt\n"
    "found = mt.search_products(query='box')\n"
    "print('found', found['total'])\n"
    "mt.query_balance()['balance']"
)


def call(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


END = call("end_of_step")


@pytest.fixture(scope="module")
def smoke():
    scenario = load_scenario("smoke")
    return scenario, get_market(scenario, 1)


def new_session(smoke) -> Session:
    scenario, market = smoke
    return Session(scenario, market, 1)


def framework(agent: HermesAgent, session: Session, tool: str, /, **args: Any) -> dict[str, Any]:
    return asyncio.run(agent.call_framework_tool(session.surface, tool, args))


def test_the_framework_tools_are_declarations_and_state_their_limits():
    tools = FRAMEWORK_TOOLS.tools()
    assert [t.name for t in tools] == [
        "execute_code", "memory_read", "memory_write", "plan_read", "plan_update",
        "skill_create", "skill_patch", "skill_list", "skill_use",
    ]  # fmt: skip
    assert {t.role for t in tools} == {"framework"}
    assert [t.name for t in tools if t.is_async] == ["execute_code", "skill_use"]
    offered = {
        s["function"]["name"]: s["function"]
        for s in HermesAgent(HermesSettings(**LOCAL)).framework_tool_schemas()
    }
    assert list(offered) == [t.name for t in tools]
    for function in offered.values():  # no idempotency key: they do not change the store
        assert "idempotency_key" not in function["parameters"]["properties"]
    memory = offered["memory_write"]
    assert f"at most {LIMITS.memory_chars} characters" in memory["description"]
    assert memory["parameters"]["properties"]["mode"]["enum"] == ["append", "replace"]
    assert memory["parameters"]["required"] == ["text"]
    assert f"at most {LIMITS.plan_chars} characters" in offered["plan_update"]["description"]
    create = offered["skill_create"]
    assert f"at most {LIMITS.max_skills} skills of {LIMITS.skill_chars}" in create["description"]
    assert create["parameters"]["properties"]["name"]["description"].startswith(
        f"Up to {LIMITS.skill_name_chars} lowercase"
    )


def test_arguments_are_checked_against_the_framework_schemas(smoke):
    agent, session = HermesAgent(HermesSettings(**LOCAL)), new_session(smoke)
    wrote = framework(agent, session, "memory_write", text="a", mode="replace")
    assert wrote == {"ok": True, "chars": 1, "limit": LIMITS.memory_chars}
    for name, args, path, message in [
        ("memory_write", {}, "$.text", "required but missing"),
        ("memory_write", {"text": "a", "mode": "erase"}, "$.mode", "'append' or 'replace'"),
        ("plan_update", {"plan": 3}, "$.plan", "valid string"),
        ("skill_use", {"name": "x", "args": [1]}, "$.args", "JSON object"),
        ("memory_read", {"extra": 1}, "$.extra", "unknown argument 'extra'"),
    ]:
        refused = asyncio.run(agent.call_framework_tool(session.surface, name, args))
        assert refused["ok"] is False and refused["error"]["code"] == "invalid_argument"
        assert refused["error"]["path"] == path and message in refused["error"]["message"]
    assert agent.framework_memory == "a" and agent.plan == ""  # refusals changed nothing


def test_skill_kind_tells_code_from_prose():
    assert skill_kind("x = mt.query_balance()") == "code"
    assert skill_kind("restock") == "steps"  # parses as Python, but does nothing
    assert skill_kind("1. read the daily report\n2. list the top product") == "steps"
    assert skill_kind("restock", "code") == "code"


def test_memory_plan_and_skills_live_on_the_agent_and_pickle(smoke):
    agent, session = HermesAgent(HermesSettings(**LOCAL)), new_session(smoke)
    framework(agent, session, "memory_write", text="S100 ships slowly")
    framework(agent, session, "memory_write", text="gel pens sell")
    framework(agent, session, "plan_update", plan="list 5 products")
    steps = "1. check\n2. list"
    created = framework(
        agent, session, "skill_create", name="restock", description="weekly", code_or_steps=steps
    )
    assert created["skill"]["kind"] == "steps"
    patched = framework(
        agent, session, "skill_patch", name="restock", find="list", replace="relist"
    )
    assert patched["skill"]["version"] == 2
    revived = pickle.loads(pickle.dumps(agent))
    assert (
        framework(revived, session, "memory_read")["memory"] == "S100 ships slowly\ngel pens sell"
    )
    assert framework(revived, session, "plan_read")["plan"] == "list 5 products"
    used = framework(revived, session, "skill_use", name="restock", args={"n": 2})
    assert used == {
        "ok": True,
        "skill": "restock",
        "steps": "1. check\n2. relist",
        "args": {"n": 2},
    }
    assert framework(revived, session, "skill_list")["skills"][0]["uses"] == 1
    assert session.trace == []  # the harness loop traces framework calls, not the tools


def test_framework_refusals_are_structured(smoke):
    agent, session = HermesAgent(HermesSettings(**LOCAL)), new_session(smoke)
    big = "x" * (LIMITS.memory_chars + 1)
    assert framework(agent, session, "memory_write", text=big)["error"]["code"] == "too_long"
    assert framework(agent, session, "skill_use", name="nope")["error"]["code"] == "unknown_skill"
    bad_name = framework(agent, session, "skill_create", name="Bad Name", description="d",
                         code_or_steps="x = 1")  # fmt: skip
    assert bad_name["error"]["path"] == "$.name"
    framework(agent, session, "skill_create", name="a", description="d", code_or_steps="x = 1")
    again = framework(agent, session, "skill_create", name="a", description="d", code_or_steps="y")
    assert again["error"]["code"] == "skill_exists"
    twice = framework(agent, session, "skill_patch", name="a", find="", replace="z")
    assert twice["error"]["code"] == "patch_mismatch"


def test_without_a_sandbox_execute_code_is_off_and_says_why(smoke, monkeypatch):
    monkeypatch.setattr(hermes, "probe_sandbox", lambda: (False, "bubblewrap is not installed"))
    agent, session = HermesAgent(HermesSettings(**LOCAL)), new_session(smoke)
    answer = framework(agent, session, "execute_code", code="1 + 1")
    assert answer["error"] == {
        "code": "code_execution_off",
        "message": "execute_code is off: bubblewrap is not installed",
    }
    assert agent.settings()["code_execution"]["mode"] == "off"
    assert "execute_code is off" in agent.system_prompt(session)


def test_unsafe_code_exec_runs_code_loudly_where_no_sandbox_exists(smoke, monkeypatch, capsys):
    monkeypatch.setattr(hermes, "probe_sandbox", lambda: (False, "no user namespaces"))
    agent, session = HermesAgent(HermesSettings(unsafe_code_exec=True, **LOCAL)), new_session(smoke)
    assert "WARNING (hermes): UNSAFE" in capsys.readouterr().err
    settings = agent.settings()["code_execution"]
    assert settings["mode"] == "unsafe" and settings["unsafe_code_exec"] is True
    assert settings["note"].startswith("UNSAFE")
    answer = framework(agent, session, "execute_code", code=SEARCH_CODE)
    assert answer["ok"] and answer["result"] == 2000.0 and answer["tool_calls"] == 2
    assert [e["origin"] for e in session.trace] == ["env", "env"]


def test_a_failing_snippet_answers_a_refusal_with_what_it_printed(smoke, monkeypatch):
    monkeypatch.setattr(hermes, "probe_sandbox", lambda: (False, "no user namespaces"))
    agent, session = HermesAgent(HermesSettings(unsafe_code_exec=True, **LOCAL)), new_session(smoke)
    code = "import merchantbench_tools as mt\nmt.query_balance()\nprint('before')\n1 / 0"
    answer = framework(agent, session, "execute_code", code=code)
    assert answer["ok"] is False and answer["error"]["code"] != "invalid_argument"
    assert answer["stdout"] == "before\n" and answer["tool_calls"] == 1
    framework(agent, session, "skill_create", name="boom", description="d", code_or_steps=code)
    used = framework(agent, session, "skill_use", name="boom")
    assert used["ok"] is False and used["skill"] == "boom" and used["tool_calls"] == 1
    assert [e["tool"] for e in session.trace] == ["query_balance", "query_balance"]


def test_a_review_is_queued_every_review_every_windows(smoke):
    agent, session = HermesAgent(HermesSettings(review_every=3, **LOCAL)), new_session(smoke)
    for _ in range(7):
        agent.on_window_end(session)
    assert agent.reviews == 2 and agent._queued == [REVIEW_PROMPT, REVIEW_PROMPT]


def settings(server: ScriptedServer, **extra: Any) -> dict[str, Any]:
    return {"model": "scripted", "base_url": server.base_url, **extra}


def read_trace(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]


def calls_in(trace: list[dict[str, Any]], window: int) -> list[tuple[str, str]]:
    return [(e["tool"], e["origin"]) for e in trace if e["window"] == window]


def tool_results(request: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Tool name -> the results the model was shown, from one request's messages."""
    names = {}
    for message in request["messages"]:
        for tool_call in message.get("tool_calls") or ():
            names[tool_call["id"]] = tool_call["function"]["name"]
    results: dict[str, list[dict[str, Any]]] = {}
    for message in request["messages"]:
        if message["role"] == "tool":
            results.setdefault(names[message["tool_call_id"]], []).append(
                json.loads(message["content"])
            )
    return results


@needs_bwrap
def test_a_smoke_run_uses_code_memory_and_skills_across_windows(tmp_path):
    replies = [
        call("plan_update", plan="Find hot boxes; list three."),
        call("memory_write", text="S100 ships slowly"),
        call("skill_create", name="cash_check", description="cash", code_or_steps=CASH_SKILL),
        call("execute_code", code=SEARCH_CODE),
        END,
        call("memory_read"),
        call("skill_use", name="cash_check", args={"note": "w1"}),
        END,
    ]
    with ScriptedServer(script_responder(replies)) as server:
        spec = RunSpec("hermes", load_scenario("smoke"), 1, settings(server, review_every=5))
        metrics = run_agent(spec, tmp_path / "run")
    trace = read_trace(tmp_path / "run")
    assert calls_in(trace, 0) == [
        ("plan_update", "framework"),
        ("memory_write", "framework"),
        ("skill_create", "framework"),
        ("search_products", "env"),  # from inside execute_code, through the bridge
        ("query_balance", "env"),
        ("execute_code", "framework"),
        ("end_of_step", "env"),
    ]
    assert calls_in(trace, 1) == [
        ("memory_read", "framework"),
        ("query_balance", "env"),
        ("skill_use", "framework"),
        ("end_of_step", "env"),
    ]
    assert metrics["tool_calls"] == sum(e["origin"] == "env" for e in trace)
    shown = tool_results(server.requests[-1])
    code = shown["execute_code"][0]
    assert code["ok"] and code["stdout"].startswith("found ") and code["tool_calls"] == 2
    assert code["result"] == 2000.0
    assert shown["memory_read"][0]["memory"] == "S100 ships slowly"
    assert shown["skill_use"][0]["result"] == {"balance": 2000.0, "note": "w1"}
    users = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"]
    assert "Find hot boxes; list three." in users[1] and "cash_check" in users[1]
    assert sum(REVIEW_PROMPT in text for text in users) == 5  # after windows 5, 10, …, 25 of 28
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["agent"]["settings"]["code_execution"]["mode"] == "sandbox"


@needs_bwrap
def test_memory_and_skills_survive_a_kill_and_a_resume(tmp_path):
    run_dir = tmp_path / "run"
    before = [
        call("memory_write", text="keep this"),
        call("skill_create", name="cash_check", description="cash", code_or_steps=CASH_SKILL),
        END,
    ]

    def kill(session: Session) -> None:
        if session.window == 3:  # window 2 played; the checkpoint is from window 2's start
            raise RuntimeError("killed")

    with ScriptedServer(script_responder(before)) as server:
        spec = RunSpec("hermes", load_scenario("smoke"), 1, settings(server))
        with pytest.raises(RuntimeError, match="killed"):
            run_agent(spec, run_dir, on_window=kill, checkpoints=CheckpointPolicy(windows=2))
        sent_before = len(server.requests)
        after = [call("memory_read"), call("skill_use", name="cash_check", args={"note": "x"})]
        server.responder = script_responder([*after, END])
        run_agent(spec, run_dir, resume=True, checkpoints=CheckpointPolicy(windows=2))
    trace = read_trace(run_dir)
    assert calls_in(trace, 2) == [
        ("memory_read", "framework"),
        ("query_balance", "env"),
        ("skill_use", "framework"),
        ("end_of_step", "env"),
    ]
    resumed = server.requests[sent_before]["messages"]
    assert any(m.get("tool_calls") for m in resumed)  # the conversation came back too
    shown = tool_results(server.requests[-1])
    assert shown["memory_read"][-1]["memory"] == "keep this"
    assert shown["skill_use"][-1]["result"]["note"] == "x"


def test_a_model_that_never_answers_in_words_ends_each_window_at_its_end_of_step(tmp_path):
    # The review prompt (every 14 windows) does not reopen a closed window either.
    with ScriptedServer(tool_loop_policy) as server:
        spec = RunSpec("hermes", load_scenario("smoke"), 1, settings(server, review_every=14))
        metrics = run_agent(spec, tmp_path / "run")
    trace = read_trace(tmp_path / "run")
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["ended"] == "completed" and metrics["windows"] == 28
    closes = [e for e in trace if e["tool"] == "end_of_step"]
    assert [e["window"] for e in closes] == list(range(28))
    assert not any(e["forced"] for e in closes) and meta["llm_usage"]["forced_windows"] == 0
    assert calls_after_close(server.requests) == dict.fromkeys(range(1, 29), 0)
    assert len(server.requests) == 28 * (len(TOOL_LOOP_STEPS) + 1)
    assert all(calls_in(trace, w)[-1] == ("end_of_step", "env") for w in range(28))
