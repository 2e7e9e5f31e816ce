"""Any agent kind in `merchantbench arena`: per-merchant `--agent-opt` checked like `run`'s, the
`react` and `hermes` harnesses against the scripted OpenAI-compatible server (real HTTP, the
official client) beside a baseline, and a misbehaving model (garbage, calls after its own
`end_of_step`) whose calls answer structured errors and change nothing for anyone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from merchantbench.agents.llm.scripted_policy import idle_policy, offered_tools, store_policy
from merchantbench.agents.llm.scripted_server import ScriptedServer, script_responder
from merchantbench.cli import app
from merchantbench.runs.arena import ArenaSpec, Entrant, read_arena, run_arena
from merchantbench.scenario import load_scenario
from merchantbench.session import Session

DAYS = 3
ARGS = ["--scenario", "smoke", "--set", f"clock.days={DAYS}", "--no-progress"]
RECORD = ("trace.jsonl", "transcript.jsonl", "metrics.json", "orders.parquet")


def _trace(arena: Path, merchant: str) -> list[dict[str, Any]]:
    path = arena / "merchants" / merchant / "trace.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _run_json(arena: Path, merchant: str) -> dict[str, Any]:
    return json.loads((arena / "merchants" / merchant / "run.json").read_text())


def test_agent_opt_sets_one_merchants_settings_on_the_command_line(tmp_path):
    with ScriptedServer(store_policy) as server:
        result = CliRunner().invoke(
            app,
            [
                "arena", *ARGS, "--out", str(tmp_path / "a"),
                "--agent", "react:scripted", "--agent", "rule-based", "--agent", "react:idle",
                "--agent-opt", f"react-scripted.base_url={server.base_url}",
                "--agent-opt", "react-scripted.max_model_calls=12",
                "--agent-opt", f"3.base_url={server.base_url}",  # by position: react-idle
            ],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    arena = tmp_path / "a"
    assert read_arena(arena).ended == "completed"
    react = _run_json(arena, "react-scripted")["agent"]["settings"]
    assert react["base_url"] == server.base_url and react["max_model_calls"] == 12
    other = _run_json(arena, "react-idle")["agent"]["settings"]
    assert other["base_url"] == server.base_url and other["model"] == "idle"
    assert other["max_model_calls"] != 12  # the setting went to one merchant only
    assert {e["tool"] for e in _trace(arena, "react-scripted")} >= {"search_products"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["react-m.no_such_setting=1"], "merchant 'react-m': agent 'react':"),
        (["1.max_model_calls=lots"], "merchant 'react-m': agent 'react':"),
        (["nobody.model=x"], "no merchant 'nobody' (merchants: react-m, expert)"),
        (["3.model=x"], "no merchant '3'"),
        (["max_model_calls=3"], "--agent-opt wants MERCHANT.KEY=VALUE"),
        (["react-m.model"], "--agent-opt wants MERCHANT.KEY=VALUE"),
        (["expert.model=x"], "merchant 'expert': agent 'expert':"),
    ],
)
def test_bad_agent_opts_are_refused_in_one_line(tmp_path, options, message):
    args = ["arena", *ARGS, "--out", str(tmp_path / "a"), "--agent", "react:m", "--agent", "expert"]
    args += [x for option in options for x in ("--agent-opt", option)]
    local = "react-m.base_url=http://127.0.0.1:9/v1"
    result = CliRunner().invoke(app, [*args, "--agent-opt", local])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], result.output
    assert "Traceback" not in result.output and not (tmp_path / "a").exists()


def _products(count: int) -> list[dict[str, Any]]:
    session = Session.open(load_scenario("smoke", overrides=[f"clock.days={DAYS}"]), 1)
    found = session.call("search_products", {"sort": "sales_30d", "page_size": count})
    return [{"product_id": r[0], "sale_price": round(r[3] * 1.5, 2)} for r in found["rows"]]


def _misbehaving(items: list[dict[str, Any]]):
    """A model that sends garbage and keeps calling tools after its own end_of_step: in each
    window's first answer, an unknown tool, arguments that are not JSON, a refused price, its
    end_of_step, then a good listing and a memory write; in its next answers, words and a
    broken tool call; an empty answer once the harness stops asking."""

    def respond(request: dict[str, Any]) -> dict[str, Any]:
        if "end_of_step" not in offered_tools(request):
            return {"content": "ok"}
        messages = request["messages"]
        start = max(i for i, m in enumerate(messages) if m["role"] == "user")
        if len(messages) - 1 == start:
            calls = [
                {"name": "drop_all_tables", "arguments": {"now": True}},
                {"name": "list_product", "arguments": "{not json"},
                {"name": "adjust_price", "arguments": {"product_id": "NOPE", "sale_price": -5}},
                {"name": "end_of_step", "arguments": {}},
                {"name": "list_product", "arguments": {"items": items}},
                {"name": "write_memory_doc", "arguments": {"content": "late", "mode": "replace"}},
            ]
            return {"content": "\x00}{garbage", "tool_calls": calls}
        return {"content": "}{", "tool_calls": [{"name": "end_of_step", "arguments": "]["}]}

    return respond


def _arena(
    tmp_path: Path, name: str, responder, agent: str = "react"
) -> tuple[Path, ScriptedServer]:
    scenario = load_scenario("smoke", overrides=[f"clock.days={DAYS}"])
    arena = tmp_path / name
    with ScriptedServer(responder) as server:
        settings = {"model": "scripted", "base_url": server.base_url}
        spec = ArenaSpec(
            scenario, 1, (Entrant("base", "rule-based"), Entrant("llm", agent, settings))
        )
        run_arena(spec, arena)
    return arena, server


@pytest.mark.parametrize("agent", ["react", "hermes"])
def test_a_misbehaving_model_beside_a_baseline_changes_nothing(tmp_path, agent):
    items = _products(4)
    bad, server = _arena(tmp_path, "bad", _misbehaving(items), agent)
    idle, _ = _arena(tmp_path, "idle", idle_policy, agent)
    assert read_arena(bad).ended == "completed"
    # Every call the store saw from the misbehaving model was refused, or its own end_of_step.
    trace = _trace(bad, "llm")
    closes = [e for e in trace if e["tool"] == "end_of_step"]
    assert len(closes) == 2 * DAYS and not any(e["forced"] for e in closes)
    assert all(not e["ok"] for e in trace if e["tool"] != "end_of_step")
    # The unknown tool and the broken JSON are refused by the harness, the bad price by the
    # store; the listing and the memory write after the close are answered `window_closed`
    # by the harness and never run.
    assert [e["tool"] for e in trace if e["window"] == 0] == ["adjust_price", "end_of_step"]
    assert {e["error"] for e in trace if not e["ok"]} == {"invalid_argument"}
    answered = [
        json.loads(m["content"])
        for request in server.requests
        for m in request["messages"]
        if m["role"] == "tool"
    ]
    codes = {a["error"]["code"] for a in answered if not a.get("ok")}
    assert {"window_closed", "unknown_tool", "invalid_argument"} <= codes, codes
    metrics = json.loads((bad / "merchants" / "llm" / "metrics.json").read_text())
    assert metrics["orders"] == 0
    # Its listing after the close never reached the store, and the baseline's record and the
    # whole market are what they are beside a model that only ends its windows.
    assert read_arena(bad).state_hash == read_arena(idle).state_hash
    for name in RECORD:
        assert (bad / "merchants" / "base" / name).read_bytes() == (
            idle / "merchants" / "base" / name
        ).read_bytes(), name


def test_react_and_hermes_merchants_trade_beside_a_baseline(tmp_path):
    listing = {"tool_calls": [{"name": "list_product", "arguments": {"items": _products(4)}}]}
    for agent in ("react", "hermes"):
        arena, _ = _arena(tmp_path, agent, script_responder([listing]), agent)
        assert read_arena(arena).ended == "completed"
        trace = _trace(arena, "llm")
        closes = [e for e in trace if e["tool"] == "end_of_step"]
        assert [e["window"] for e in closes] == list(range(2 * DAYS)), agent
        assert not any(e["forced"] or e["error"] == "window_closed" for e in closes), agent
        assert any(e["tool"] == "list_product" and e["ok"] for e in trace), agent
        assert _run_json(arena, "llm")["agent"]["name"] == agent


def test_a_harness_stops_at_its_own_end_of_step_while_a_slower_rival_thinks(tmp_path):
    # The fast merchant closes each window first and waits for the slow one; its harness must
    # take its window as done then (`surface.window_done`), not ask its model again and have
    # its calls refused as `window_closed` for as long as the rival thinks.
    scenario = load_scenario("smoke", overrides=[f"clock.days={DAYS}"])
    with (
        ScriptedServer(store_policy) as fast,
        ScriptedServer(store_policy, latency=0.05) as slow,
    ):
        entrants = tuple(
            Entrant(name, "react", {"model": "scripted", "base_url": server.base_url})
            for name, server in (("fast", fast), ("slow", slow))
        )
        run_arena(ArenaSpec(scenario, 1, entrants), tmp_path / "arena")
    for merchant in ("fast", "slow"):
        trace = _trace(tmp_path / "arena", merchant)
        closes = [e for e in trace if e["tool"] == "end_of_step"]
        assert [e["window"] for e in closes] == list(range(2 * DAYS)), merchant
        assert not any(e["forced"] or not e["ok"] for e in trace), merchant
    assert fast.request_count == slow.request_count


@pytest.mark.requires("bwrap")  # the Hermes Agent runs confined by bubblewrap
def test_the_hermes_agent_is_one_merchant_of_an_arena(tmp_path, monkeypatch):
    from merchantbench.agents.hermes_agent.env import HermesEnvError, ensure_env
    from requires import missing

    try:
        ensure_env()  # its own environment, made once from the package index
    except HermesEnvError as exc:
        missing("hermes-agent", str(exc))
    mcp = "mcp__merchantbench__"

    def policy(request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        start = max(i for i, m in enumerate(messages) if m["role"] == "user")
        done = sum(1 for m in messages[start:] if m["role"] == "tool")
        steps = [(mcp + "search_products", {"query": "bag"}), (mcp + "end_of_step", {})]
        if done >= len(steps):
            return {"content": "done", "tool_calls": []}
        name, arguments = steps[done]
        return {"content": None, "tool_calls": [{"name": name, "arguments": arguments}]}

    key = "sk-test-arena-hermes-7d2e"
    monkeypatch.setenv("MB_TEST_HERMES_KEY", key)
    scenario = load_scenario("smoke", overrides=["clock.days=2"])
    with ScriptedServer(policy) as server:
        settings = {"model": "scripted", "base_url": server.base_url}
        settings["api_key_env"] = "MB_TEST_HERMES_KEY"
        entrants = (Entrant("base", "rule-based"), Entrant("hermes", "hermes-agent", settings))
        run_arena(ArenaSpec(scenario, 1, entrants), tmp_path / "arena")
    arena = tmp_path / "arena"
    assert read_arena(arena).ended == "completed"
    trace = _trace(arena, "hermes")
    closes = [e for e in trace if e["tool"] == "end_of_step"]
    # Hermes closed every window itself, once; it then waited for the baseline.
    assert [e["window"] for e in closes] == [0, 1, 2, 3]
    assert all(e["ok"] and not e["forced"] for e in closes)
    searches = [e for e in trace if e["tool"] == "search_products"]
    assert [e["window"] for e in searches] == [0, 1, 2, 3] and all(e["ok"] for e in searches)
    assert set(server.authorizations) == {f"Bearer {key}"}
    assert [p for p in arena.rglob("*") if p.is_file() and key.encode() in p.read_bytes()] == []


def test_an_llm_merchants_record_is_the_run_record_words_split_out(tmp_path):
    # One record writer for every merchant: an LLM merchant of an arena keeps the model's words
    # in model_words.jsonl.gz, as `merchantbench run` does, and its model-call log without them.
    # (At 177dc89 the arena kept the words inline in model_calls.jsonl and wrote no words file.)
    from merchantbench.record.schema import MODEL_CALLS_FILE, MODEL_WORDS_FILE
    from merchantbench.record.words import read_words
    from merchantbench.runs.runner import RunSpec, run_agent

    scenario = load_scenario("smoke", overrides=[f"clock.days={DAYS}"])
    with ScriptedServer(store_policy) as server:
        settings = {"model": "scripted", "base_url": server.base_url}
        run_arena(ArenaSpec(scenario, 1, (Entrant("llm", "react", settings),)), tmp_path / "a")
        run_agent(RunSpec("react", scenario, 1, settings), tmp_path / "run")
    merchant = tmp_path / "a" / "merchants" / "llm"
    names = {p.name for p in merchant.iterdir()} - {"checkpoint"}
    assert names == {p.name for p in (tmp_path / "run").iterdir()} - {"checkpoint"}
    assert MODEL_WORDS_FILE in names
    calls = [json.loads(line) for line in (merchant / MODEL_CALLS_FILE).read_text().splitlines()]
    assert calls and not any("words" in call for call in calls)
    words = list(read_words(merchant / MODEL_WORDS_FILE))
    assert [w["seq"] for w in words] == [c["seq"] for c in calls]
    assert words == list(read_words(tmp_path / "run" / MODEL_WORDS_FILE))
