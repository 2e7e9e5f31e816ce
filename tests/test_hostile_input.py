"""Hostile input from an agent never crashes a run, never changes state, and is traced as
strict JSON (issue 9: each case reproduced, then the fuzz test over every tool)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from merchantbench.agents.llm.conversation import parse_tool_calls
from merchantbench.agents.llm.scripted_server import ScriptedServer, script_responder
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.session import Session
from merchantbench.tools.agent_input import MAX_DEPTH
from tools.store_market import new_session

SURROGATE = "\ud800"
DEEP = "[" * 100_000 + "]" * 100_000


def strict(entry: dict[str, Any]) -> str:
    """The entry as strict JSON (no NaN, valid UTF-8) — or an exception."""
    text = json.dumps(entry, allow_nan=False, ensure_ascii=False)
    text.encode("utf-8")
    return text


def state(session: Session) -> tuple[str, str, str]:
    store = json.dumps(session.memory.idempotency_store, sort_keys=True)
    return session.state_hash(), session.memory.memory_doc, store


def refused(session: Session, tool: Any, args: Any, key: Any = None) -> dict[str, Any]:
    before = state(session)
    answer = session.call(tool, args, key)
    assert answer["ok"] is False and answer["error"]["code"]
    assert state(session) == before
    strict(answer)
    strict(session.trace[-1])
    return answer


def test_a_lone_surrogate_is_refused_not_raised():
    session = new_session()
    refused(session, "write_memory_doc", {"content": "notes " + SURROGATE})
    refused(session, "write_memory_doc", '{"content": "notes \\ud800"}')  # valid JSON, bad text
    refused(session, "search_products", {"query": SURROGATE})
    refused(session, "query_balance", {}, key=SURROGATE)
    refused(session, SURROGATE, {})
    assert session.call("write_memory_doc", {"content": "fine"})["ok"]


def test_deep_nesting_is_refused_without_recursion():
    session = new_session()
    for tool in ("list_product", "query_balance", "no_such_tool"):
        answer = refused(session, tool, '{"items": ' + DEEP + "}")
        assert "deeper" in answer["error"]["message"] or answer["error"]["code"] == "unknown_tool"
    nested: Any = 0
    for _ in range(5_000):
        nested = [nested]
    refused(session, "list_product", {"items": nested})
    shallow: Any = [{"product_id": "x", "sale_price": 1.0}]
    assert MAX_DEPTH > 3 and session.call("list_product", {"items": shallow})["error"]


def test_non_json_values_from_a_python_agent_are_refused_before_acting():
    session = new_session()
    pid = session.call("search_products", {"query": "storage box"})["rows"][0][0]
    for bad in (np.float32(12.5), np.int64(12), b"12", {12.5}, float("nan"), float("inf")):
        item = {"product_id": pid, "sale_price": bad}
        answer = refused(session, "list_product", {"items": [item]})
        assert answer["error"]["path"].startswith("$.items[0]")
    refused(session, "list_product", {"items": [{"product_id": np.str_(pid), "sale_price": 20}]})
    assert session.call("list_product", {"items": [{"product_id": pid, "sale_price": 20.0}]})["ok"]


def test_nan_from_a_model_is_refused_and_the_trace_stays_strict_json():
    session = new_session()
    refused(session, "search_products", '{"query": "box", "min_price": NaN}')
    refused(session, "search_products", '{"query": "box", "max_price": Infinity}')
    assert all(strict(entry) for entry in session.trace)


def test_an_absurd_price_filter_is_an_empty_search_not_an_overflow():
    session = new_session()
    answer = session.call("search_products", {"query": "storage box", "min_price": 1.8e306})
    assert answer["ok"] and answer["total"] == 0
    answer = session.call("search_products", {"query": "storage box", "max_price": 1.7e308})
    assert answer["ok"] and answer["total"] > 0


def test_an_end_of_step_key_is_scoped_to_its_window():
    session = new_session()
    assert session.call("end_of_step", {}, "close")["ok"] and session.window == 1
    assert session.call("end_of_step", {}, "close")["ok"]
    assert session.window == 2  # the same key closes the next window too
    session.call("end_of_step", {"idempotency_key": "k"})
    session.call("end_of_step", {"idempotency_key": "k"})
    assert session.window == 4


def test_the_harness_parser_refuses_hostile_arguments():
    known = frozenset({"write_memory_doc", "end_of_step"})

    def one(arguments: str, name: str = "write_memory_doc") -> Any:
        message = {"tool_calls": [{"id": "c1", "function": {"name": name, "arguments": arguments}}]}
        return parse_tool_calls(message, known)[0]

    assert one('{"content": ' + DEEP + "}").error["error"]["message"].startswith("parsing error")
    assert one('{"content": "a\\ud800"}').error["error"]["path"] == "$.content"
    assert one('{"content": NaN}').error is not None
    assert one("[1]").error is not None
    assert one("{}", name=SURROGATE).error["error"]["code"] == "unknown_tool"
    strict(one("{}", name=SURROGATE).error)
    assert one('{"content": "ok"}').args == {"content": "ok"}


def test_a_surrogate_from_the_model_does_not_end_a_react_run(tmp_path):
    poison = '{"content": "x\\ud800", "mode": "append"}'
    replies = [
        {
            "content": "thinking \ud800",
            "tool_calls": [{"name": "write_memory_doc", "arguments": poison}],
        },
        {"tool_calls": [{"name": "search_products", "arguments": '{"query": "\\udfff"}'}]},
    ]
    scenario = load_scenario("smoke", overrides=["clock.days=3"])
    with ScriptedServer(script_responder(replies)) as server:
        settings_ = {"model": "scripted", "base_url": server.base_url}
        metrics = run_agent(RunSpec("react", scenario, 1, settings_), tmp_path / "run")
    assert metrics["windows"] == scenario.clock.windows
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["ended"] == "completed"
    lines = (tmp_path / "run" / "trace.jsonl").read_text(encoding="utf-8").splitlines()
    entries = [json.loads(line, parse_constant=_no_constants) for line in lines]
    assert not any(e["tool"] == "write_memory_doc" for e in entries)  # refused by the parser
    calls = [
        json.loads(x) for x in (tmp_path / "run" / "model_calls.jsonl").read_text().split("\n") if x
    ]
    assert calls[0]["parse_errors"] == 1 and calls[1]["parse_errors"] == 1
    assert len(server.requests) > 2  # the model was asked again after the poison


def _no_constants(name: str) -> Any:
    raise AssertionError(f"{name} in a trace")


# --- the fuzz test ----------------------------------------------------------------------------

HOSTILE_TEXT = st.one_of(
    st.text(max_size=20),
    st.sampled_from([SURROGATE, "\udfff", "a\ud800b", "\x00", "é" * 10, "💥"]),
    st.just("x" * 300),
)
HOSTILE_NUMBERS = st.one_of(
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1.8e306, -1.8e306, 2**63, -(2**63) - 1, 10**400]),
)
SCALARS = st.one_of(HOSTILE_TEXT, HOSTILE_NUMBERS, st.booleans(), st.none(), st.binary(max_size=4))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(HOSTILE_TEXT, inner, max_size=4)
    ),
    max_leaves=12,
)


def _raw(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


@st.composite
def hostile_calls(draw: st.DrawFn, tools: list[str]) -> tuple[Any, Any, Any]:
    tool = draw(st.one_of(st.sampled_from(tools), HOSTILE_TEXT))
    args = draw(
        st.one_of(
            st.dictionaries(st.sampled_from(["query", "items", "product_id", "content",
                                             "sale_price", "min_price", "page", "mode",
                                             "product_ids", "scope", "days"]) | HOSTILE_TEXT,
                            VALUES, max_size=4),
            VALUES.map(_raw),
            st.sampled_from([DEEP, "{" * 50_000, '{"a": NaN}', "", "null", "[]"]),
        )
    )  # fmt: skip
    key = draw(st.one_of(st.none(), HOSTILE_TEXT, st.integers()))
    return tool, args, key


TOOLS = [t["function"]["name"] for t in new_session().tool_schemas() if t["function"]["name"]]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(hostile_calls([n for n in TOOLS if n != "end_of_step"]), max_size=6))
def test_fuzz_every_tool_with_hostile_input(calls):
    session = new_session()
    for tool, args, key in calls:
        before = state(session)
        answer = session.call(tool, args, key)  # must not raise
        strict(answer)
        if not answer["ok"]:
            assert state(session) == before
    for entry in session.trace:
        strict(entry)


@settings(max_examples=200, deadline=None)
@given(calls=st.lists(hostile_calls(TOOLS), max_size=4))
def test_fuzz_the_harness_parser(calls):
    message = {
        "tool_calls": [
            {"id": f"c{i}", "function": {"name": t if isinstance(t, str) else "", "arguments": a}}
            for i, (t, a, _) in enumerate(calls)
            if isinstance(a, str)
        ]
    }
    for call in parse_tool_calls(message, frozenset(TOOLS)):
        assert (call.args is None) != (call.error is None)
        if call.error is not None:
            strict(call.error)
