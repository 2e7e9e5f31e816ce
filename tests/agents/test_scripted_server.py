"""The scripted OpenAI-compatible server, as the official client and the CLI see it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

import openai
import pytest

from merchantbench.agents.llm.scripted_policy import (
    TOOL_LOOP_STEPS,
    store_policy,
    tool_loop_policy,
)
from merchantbench.agents.llm.scripted_server import FaultPlan, ScriptedServer, script_responder

SEARCH = {"tool_calls": [{"name": "search_products", "arguments": {"query": "收纳盒"}}]}
ASK = [{"role": "system", "content": "brief"}, {"role": "user", "content": "window 1 of 2"}]


def _client(server: ScriptedServer) -> openai.OpenAI:
    return openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0, timeout=5)


def test_chat_completion_has_tool_calls_usage_and_finish_reason():
    with ScriptedServer(script_responder([SEARCH])) as server:
        client = _client(server)
        first = client.chat.completions.create(model="m", messages=ASK)
        answer = first.choices[0].message
        result = {"role": "tool", "tool_call_id": answer.tool_calls[0].id, "content": '{"ok":true}'}
        history = [*ASK, answer.model_dump(exclude_none=True), result]
        second = client.chat.completions.create(model="m", messages=history)
    call = first.choices[0].message.tool_calls[0]
    assert call.function.name == "search_products"
    assert json.loads(call.function.arguments) == {"query": "收纳盒"}
    assert first.choices[0].finish_reason == "tool_calls"
    assert first.usage.prompt_tokens > 0 and first.usage.prompt_tokens_details.cached_tokens == 0
    # After the script ends the server closes windows; the seen prefix counts as cached.
    assert second.choices[0].message.tool_calls[0].function.name == "end_of_step"
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert 0 < cached < second.usage.prompt_tokens
    assert [r["messages"] for r in server.requests] == [ASK, history]


def test_a_server_that_keeps_no_requests_still_counts_them():
    with ScriptedServer(script_responder([SEARCH]), keep_requests=False) as server:
        for _ in range(3):
            _client(server).chat.completions.create(model="m", messages=ASK)
    assert server.request_count == 3 and server.requests == [] == server.authorizations


def test_models_endpoint_lists_the_scripted_model():
    with ScriptedServer(script_responder([])) as server:
        models = _client(server).models.list()
    assert [m.id for m in models.data] == ["scripted"]


def test_fault_rate_and_kinds_are_as_planned():
    plan = FaultPlan(rate=0.2, kinds=("server_error", "malformed_args"), seed=5)
    with ScriptedServer(script_responder([]), plan) as server:
        client = _client(server)
        outcomes = []
        for _ in range(200):
            try:
                reply = client.chat.completions.create(model="m", messages=ASK)
            except openai.InternalServerError:
                outcomes.append("server_error")
                continue
            arguments = reply.choices[0].message.tool_calls[0].function.arguments
            try:
                json.loads(arguments)
                outcomes.append("ok")
            except ValueError:
                outcomes.append("malformed_args")
    assert outcomes.count("server_error") == server.faults_injected["server_error"]
    assert outcomes.count("malformed_args") == server.faults_injected["malformed_args"]
    assert 20 <= 200 - outcomes.count("ok") <= 60


def test_slow_answers_take_their_time():
    plan = FaultPlan(rate=1.0, kinds=("slow",), slow_seconds=0.3)
    with ScriptedServer(script_responder([]), plan) as server:
        began = time.monotonic()
        _client(server).chat.completions.create(model="m", messages=ASK)
    assert time.monotonic() - began >= 0.3


def test_bad_fault_plans_are_refused():
    with pytest.raises(ValueError, match="unknown kinds"):
        FaultPlan(rate=0.1, kinds=("earthquake",))
    with pytest.raises(ValueError):
        FaultPlan(rate=1.5)


def _request_with(steps: list[tuple[str, dict, dict]]) -> dict:
    messages = [
        {"role": "user", "content": "Day 1: window 1 of 28.\nListings: 0 of 50 slots used."}
    ]
    for n, (name, arguments, result) in enumerate(steps):
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        call = {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": text}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": json.dumps(result)})
    return {"messages": messages}


def test_store_policy_lists_good_products_from_a_search():
    columns = ["product_id", "price", "stock", "ship_hours", "rating", "supplier_rating"]
    rows = [["good", 10.0, "in_stock", 12, 4.8, 4.6], ["slow", 10.0, "in_stock", 72, 4.8, 4.6]]
    report = {"ok": True, "hot_keywords": [{"keyword": "Yoga Mat"}]}
    search = {"ok": True, "columns": columns, "rows": rows}
    steps = [("get_daily_report", {}, report)]
    assert store_policy(_request_with(steps))["tool_calls"][0]["arguments"] == {"query": "Yoga Mat"}
    steps.append(("search_products", {"query": "Yoga Mat"}, search))
    listing = store_policy(_request_with(steps))["tool_calls"][0]
    assert listing["name"] == "list_product"
    assert listing["arguments"]["items"] == [{"product_id": "good", "sale_price": 13.5}]


def test_store_policy_repeats_a_call_the_harness_could_not_parse():
    refused = {"ok": False, "error": {"code": "invalid_json", "message": "parsing error"}}
    reply = store_policy(_request_with([("get_daily_report", "{oops", refused)]))
    assert reply["tool_calls"][0]["name"] == "get_daily_report"


def _tools(*names: str) -> list[dict]:
    return [{"type": "function", "function": {"name": name, "parameters": {}}} for name in names]


@pytest.mark.parametrize("prefix", ["", "mcp__merchantbench__"])
def test_tool_loop_policy_never_answers_in_words_while_it_has_tools(prefix):
    names = [prefix + n for n in ("get_product_detail", "query_balance", "end_of_step")]
    ok, refused = {"ok": True}, {"ok": False, "error": {"code": "unknown_product"}}
    steps = [(prefix + name, args, refused) for name, args in TOOL_LOOP_STEPS[:3]]
    steps += [(prefix + "query_balance", {}, ok), (prefix + "end_of_step", {}, ok)]
    made = []
    for done in range(len(steps) + 3):  # the window's steps, then past its end_of_step
        request = {
            **_request_with(steps[:done] + [steps[-1]] * (done - len(steps))),
            "tools": _tools(*names),
        }
        reply = tool_loop_policy(request)["tool_calls"][0]
        made.append((reply["name"], reply["arguments"]))
    expected = [(prefix + name, args) for name, args in TOOL_LOOP_STEPS]
    assert made == expected + [(prefix + "end_of_step", {})] * 4
    # Refused calls differ from each other: no client takes them for one call repeated.
    assert len({json.dumps(a, sort_keys=True) for _, a in made[:3]}) == 3
    # A side request (no store tools offered: a title, a summary) gets words.
    assert tool_loop_policy({"messages": ASK, "tools": []}) == {"content": "ok"}


def test_cli_serves_a_policy_until_terminated():
    command = [sys.executable, "-c", "from merchantbench.cli import main; main()"]
    args = ["scripted-server", "--policy", "tool_loop", "--port", "0", "--fault-rate", "0"]
    server = subprocess.Popen(command + args, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline()
        base_url = line.split(" at ")[1].split()[0]
        with urllib.request.urlopen(f"{base_url}/models", timeout=10) as answer:
            assert json.load(answer)["data"][0]["id"] == "scripted"
        client = openai.OpenAI(api_key="k", base_url=base_url, max_retries=0, timeout=10)
        tools = _tools("mcp__merchantbench__query_balance", "mcp__merchantbench__end_of_step")
        asked = client.chat.completions.create(model="scripted", messages=ASK, tools=tools)
        call = asked.choices[0].message.tool_calls[0]
        assert call.function.name == "get_product_detail"  # the first step, as named
    finally:
        server.terminate()
        _, rest = server.communicate(timeout=10)
    assert server.returncode == 0
    assert "served 1 requests" in rest


def test_a_streamed_answer_is_the_same_answer_in_chunks():
    reply = {"content": "thinking", "tool_calls": [{"name": "end_of_step", "arguments": {}}]}
    with ScriptedServer(script_responder([reply, reply])) as server:
        client = _client(server)
        messages = [{"role": "user", "content": "go"}]
        whole = client.chat.completions.create(model="m", messages=messages)
        chunks = list(
            client.chat.completions.create(
                model="m", messages=messages, stream=True, stream_options={"include_usage": True}
            )
        )
    deltas = [c.choices[0] for c in chunks if c.choices]
    assert "".join(d.delta.content or "" for d in deltas) == whole.choices[0].message.content
    calls = [call for d in deltas for call in d.delta.tool_calls or []]
    assert [(c.function.name, c.function.arguments) for c in calls] == [("end_of_step", "{}")]
    assert deltas[-1].finish_reason == "tool_calls"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
