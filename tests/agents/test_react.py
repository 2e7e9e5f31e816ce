"""ReAct end to end on the smoke scenario: the official client over real HTTP against the
scripted server, through the runner and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from merchantbench.agents.llm.conversation import (
    COMPACTION_REMINDER,
    TRIMMED_NOTE,
    Conversation,
    message_tokens,
)
from merchantbench.agents.llm.scripted_policy import (
    TOOL_LOOP_STEPS,
    silent_policy,
    store_policy,
    tool_loop_policy,
)
from merchantbench.agents.llm.scripted_server import FaultPlan, ScriptedServer, script_responder
from merchantbench.catalog.cache import get_market
from merchantbench.cli import app
from merchantbench.runs.runner import CheckpointPolicy, RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.session import Session
from window_close import calls_after_close


def _scenario(days: int | None):
    return load_scenario("smoke", overrides=[f"clock.days={days}"] if days else None)


def _run(tmp_path, responder, days=3, faults=None, checkpoint_every=None, **settings):
    """Run `react` against a scripted server; metrics, run dir, server, run.json, trace."""
    run_dir = tmp_path / "run"
    with ScriptedServer(responder, faults) as server:
        settings = {"model": "scripted", "base_url": server.base_url, **settings}
        spec = RunSpec("react", _scenario(days), 1, settings)
        every = None if checkpoint_every is None else CheckpointPolicy(windows=checkpoint_every)
        metrics = run_agent(spec, run_dir, checkpoints=every)
    meta = json.loads((run_dir / "run.json").read_text())
    trace = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    return metrics, run_dir, server, meta, trace


def _model_calls(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "model_calls.jsonl").read_text().splitlines()]


def test_full_smoke_run_with_the_store_policy(tmp_path):
    metrics, run_dir, server, meta, trace = _run(tmp_path, store_policy, days=None)
    assert meta["ended"] == "completed" and metrics["windows"] == 28
    usage = meta["llm_usage"]
    records = _model_calls(run_dir)
    assert usage["calls"] == len(records) == len(server.requests)
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert usage["input_tokens"] == sum(r["input_tokens"] for r in records) > 0
    assert usage["cached_tokens"] > 0 and usage["forced_windows"] == 0
    listed = [e for e in trace if e["tool"] == "list_product" and e["ok"]]
    assert listed and metrics["orders"] > 0
    assert all(e["origin"] == "env" for e in trace)
    # Stable prefix: every request starts with the same system message and tool list.
    first = server.requests[0]
    assert all(r["messages"][0] == first["messages"][0] for r in server.requests)
    assert all(r["tools"] == first["tools"] for r in server.requests)


def test_a_model_that_stops_calling_tools_is_forced_and_told(tmp_path):
    metrics, _, server, meta, trace = _run(tmp_path, silent_policy, days=2)
    ends = [e for e in trace if e["tool"] == "end_of_step"]
    assert len(ends) == 4 and all(e["forced"] for e in ends)
    assert metrics["forced_end_of_step"] == 4 and meta["llm_usage"]["forced_windows"] == 4
    second_window = server.requests[1]["messages"][-1]["content"]
    assert "closed for you because you replied without calling a tool" in second_window


def test_a_model_that_never_ends_is_forced_after_its_calls(tmp_path):
    def balance_forever(request):
        return {"tool_calls": [{"name": "query_balance", "arguments": {}}]}

    _, _, server, _, trace = _run(tmp_path, balance_forever, days=1, max_model_calls=3)
    assert len(server.requests) == 6
    assert [e["tool"] for e in trace if e["window"] == 0] == ["query_balance"] * 3 + ["end_of_step"]
    assert all(e["forced"] for e in trace if e["tool"] == "end_of_step")


def test_a_model_that_never_answers_in_words_ends_each_window_at_its_end_of_step(tmp_path):
    # After every tool result it calls another tool; once the window is closed, end_of_step
    # again. The window ends at the first end_of_step: no model call after it.
    metrics, _, server, meta, trace = _run(tmp_path, tool_loop_policy, days=None)
    assert meta["ended"] == "completed" and metrics["windows"] == 28
    closes = [e for e in trace if e["tool"] == "end_of_step"]
    assert [e["window"] for e in closes] == list(range(28))
    assert not any(e["forced"] for e in closes) and meta["llm_usage"]["forced_windows"] == 0
    assert calls_after_close(server.requests) == dict.fromkeys(range(1, 29), 0)
    assert len(server.requests) == 28 * (len(TOOL_LOOP_STEPS) + 1)
    refused = [e for e in trace if e["tool"] == "get_product_detail"]
    assert len(refused) == 3 * 28 and not any(e["ok"] for e in refused)
    balances = [e for e in trace if e["tool"] == "query_balance"]
    assert len(balances) == 28 and all(e["ok"] for e in balances)


def test_malformed_arguments_and_unknown_tools_go_back_as_parsing_errors(tmp_path):
    script = [
        {"tool_calls": [{"name": "query_balance", "arguments": '{"oops": '}]},
        {"tool_calls": [{"name": "teleport_store", "arguments": {}}]},
    ]
    _, _, server, meta, trace = _run(tmp_path, script_responder(script), days=1)
    bad_json = json.loads(server.requests[1]["messages"][-1]["content"])
    unknown = json.loads(server.requests[2]["messages"][-1]["content"])
    assert bad_json["error"]["code"] == "invalid_json"
    assert bad_json["error"]["message"].startswith("parsing error")
    # The one answer to an unknown tool (tools.errors.unknown_tool), as the surface gives it.
    assert unknown["error"]["code"] == "unknown_tool"
    assert unknown["error"]["message"].startswith(
        "parsing error: There is no tool named 'teleport_store'. Available tools: "
    )
    assert meta["llm_usage"]["parse_errors"] == 2
    assert [e["tool"] for e in trace if e["window"] == 0] == ["end_of_step"]  # nothing else ran


def _fixed_prompt_tokens() -> int:
    scenario = _scenario(3)
    session = Session(scenario, get_market(scenario, 1), 1)
    conversation = Conversation(10**9, 1)
    conversation.start(session.brief(), session.tool_schemas())
    return conversation.prompt_tokens


def test_compaction_reminds_then_keeps_the_newest_tokens(tmp_path):
    compact_at = _fixed_prompt_tokens() + 2000
    _, _, server, meta, trace = _run(
        tmp_path, store_policy, days=3, compact_at_tokens=compact_at, keep_tokens=1000
    )
    reminded = [
        i
        for i, r in enumerate(server.requests)
        if r["messages"][-1]["content"] == COMPACTION_REMINDER
    ]
    assert reminded and meta["llm_usage"]["compactions"] >= 1
    answer = server.requests[reminded[0] + 1]["messages"]
    assert answer[-2]["tool_calls"][0]["function"]["name"] == "write_memory_doc"
    assert any(e["tool"] == "write_memory_doc" and e["ok"] for e in trace)
    trimmed = [r for r in server.requests if r["messages"][1]["content"] == TRIMMED_NOTE]
    assert trimmed
    kept = sum(message_tokens(m) for m in trimmed[0]["messages"][2:])
    assert kept <= 1000 + max(message_tokens(m) for m in trimmed[0]["messages"][2:])
    longest = max(sum(message_tokens(m) for m in r["messages"]) for r in server.requests)
    assert longest < compact_at + 3000


def test_twenty_percent_faults_the_run_completes_and_retries_are_counted(tmp_path):
    faults = FaultPlan(rate=0.2, seed=11, slow_seconds=0.01)
    metrics, run_dir, server, meta, _ = _run(
        tmp_path, store_policy, days=None, faults=faults, retry_base_seconds=0.001, max_retries=10
    )
    assert meta["ended"] == "completed" and metrics["windows"] == 28
    injected = server.faults_injected
    retried = sum(injected[k] for k in ("rate_limit", "server_error", "truncated", "dropped"))
    usage = meta["llm_usage"]
    assert retried > 0 and usage["retries"] == retried
    assert usage["retries"] == sum(r["retries"] for r in _model_calls(run_dir))
    assert usage["parse_errors"] == injected["malformed_args"] > 0
    assert usage["failed_calls"] == 0 and usage["forced_windows"] == 0


def test_models_file_params_reach_every_request(tmp_path):
    with ScriptedServer(store_policy) as server:
        models = tmp_path / "models.toml"
        models.write_text(
            f'[thinker]\nbase_url = "{server.base_url}"\nmodel = "scripted-r1"\n'
            'price_input = 1.0\nprice_output = 4.0\nparams = { reasoning_effort = "high" }\n'
        )
        settings = {"models_file": str(models), "model_entry": "thinker"}
        run_agent(RunSpec("react", _scenario(1), 1, settings), tmp_path / "run")
    assert server.requests and all(r["reasoning_effort"] == "high" for r in server.requests)
    assert all(r["model"] == "scripted-r1" for r in server.requests)
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["llm_usage"]["cost"] > 0


def test_the_api_key_reaches_the_server_but_no_file_of_the_run(tmp_path, monkeypatch):
    key = "sk-fake-MB-7f3a9c2e41d8"
    monkeypatch.setenv("MB_FAKE_KEY", key)
    _, run_dir, server, meta, _ = _run(
        tmp_path, store_policy, days=3, checkpoint_every=2, api_key_env="MB_FAKE_KEY"
    )
    assert set(server.authorizations) == {f"Bearer {key}"}
    assert meta["agent"]["settings"]["api_key_env"] == "MB_FAKE_KEY"
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert any(p.name == "state.pkl" for p in files)
    assert not [p for p in files if key.encode() in p.read_bytes()]


def test_a_token_budget_ends_the_run_cleanly(tmp_path):
    metrics, _, server, meta, trace = _run(tmp_path, store_policy, days=3, max_tokens=20_000)
    assert meta["ended"] == "stopped" and meta["stop_reason"].startswith("budget: ")
    assert metrics["windows"] == 6 and meta["llm_usage"]["tokens"] >= 20_000
    assert len(server.requests) == meta["llm_usage"]["calls"] < 10
    last_model_window = max(e["window"] for e in trace if e["tool"] != "end_of_step")
    idle = [e for e in trace if e["window"] > last_model_window]
    assert idle and all(e["tool"] == "end_of_step" and e["forced"] for e in idle)


def test_a_wall_time_budget_of_zero_makes_no_call(tmp_path):
    metrics, _, server, meta, _ = _run(tmp_path, store_policy, days=1, max_wall_seconds=0)
    assert server.requests == [] and meta["stop_reason"].startswith("budget: ")
    assert metrics["windows"] == 2


def test_cli_runs_react_with_model_options(tmp_path):
    with ScriptedServer(store_policy) as server:
        out = tmp_path / "cli-run"
        args = ["run", "--agent", "react", "--scenario", "smoke", "--days", "1", "--out", str(out),
                "--no-progress", "--model", "scripted", "--base-url", server.base_url,
                "--param", "reasoning_effort=low", "--agent-opt", "max_model_calls=4",
                "--max-tokens", "900000"]  # fmt: skip
        result = CliRunner().invoke(app, args)
        # A cost budget needs prices, which --model/--base-url do not state: refused.
        refused = CliRunner().invoke(app, [*args, "--max-cost", "5", "--out", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    settings = json.loads((out / "run.json").read_text())["agent"]["settings"]
    assert settings["max_model_calls"] == 4 and settings["budget"]["max_tokens"] == 900_000
    assert refused.exit_code != 0 and "--max-cost needs the model's prices" in refused.output
    assert not (tmp_path / "c").exists()
    assert all(r["reasoning_effort"] == "low" for r in server.requests)


def test_cli_says_which_key_variable_is_missing(tmp_path, monkeypatch):
    monkeypatch.delenv("MB_MISSING_KEY", raising=False)
    args = ["run", "--agent", "react", "--scenario", "smoke", "--out", str(tmp_path / "r"),
            "--model", "m", "--base-url", "https://api.example.com/v1",
            "--api-key-env", "MB_MISSING_KEY"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "MB_MISSING_KEY is not set" in result.output
