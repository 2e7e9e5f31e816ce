"""The tools bridge's parent end against hostile request lines: every one gets a structured
answer, none reaches a tool, and the parent never raises."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from merchantbench.agents.llm.bridge import MAX_NESTING, ToolBridge, _nesting
from merchantbench.catalog.cache import get_market
from merchantbench.scenario import load_scenario
from merchantbench.session import Session


@pytest.fixture(scope="module")
def market():
    scenario = load_scenario("smoke")
    return scenario, get_market(scenario, 1)


@pytest.fixture
def bridge(market):
    return ToolBridge(Session(market[0], market[1], 1))


def nested_request(depth: int) -> bytes:
    value = "[" * depth + "]" * depth
    return f'{{"id": 1, "tool": "search_products", "args": {{"query": {value}}}}}'.encode()


def refused(bridge: ToolBridge, line: bytes) -> str:
    """The bad_request message for a line, after checking that no tool saw it."""
    reply = bridge.answer(line)
    json.dumps(reply).encode("utf-8")  # the answer itself can always be sent
    assert reply["id"] is None and reply["result"]["error"]["code"] == "bad_request", reply
    assert bridge.session.trace == [] and bridge.calls == 0
    return reply["result"]["error"]["message"]


@pytest.mark.parametrize("depth", [40, 900, 950, 980, 990, 995, 1000, 100_000])
def test_deeply_nested_requests_are_refused_before_parsing(bridge, depth):
    # 990 deep used to parse, then exhaust the stack inside the tool call: the parent crashed.
    assert "at most 32 levels" in refused(bridge, nested_request(depth))


def test_nesting_up_to_the_limit_reaches_the_tool(bridge):
    reply = bridge.answer(nested_request(MAX_NESTING - 2))  # + the request and args objects
    assert reply["result"]["error"]["code"] == "invalid_argument"  # the tool's own refusal
    assert bridge.calls == 1


@pytest.mark.parametrize(
    "args", ['{"query": "\\ud800"}', '{"\\udfff": 1}', '{"query": "a\\udc80b"}']
)
def test_lone_surrogates_are_refused(bridge, args):
    line = f'{{"id": 1, "tool": "search_products", "args": {args}}}'.encode()
    assert "lone surrogates" in refused(bridge, line)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", "-2e400"])
def test_non_finite_numbers_are_refused(bridge, number):
    line = f'{{"id": 1, "tool": "search_products", "args": {{"max_price": {number}}}}}'
    assert "finite" in refused(bridge, line.encode())


def test_oversize_and_undecodable_lines_are_refused(bridge):
    assert "longer than" in refused(bridge, None)  # what the reader hands over for a long line
    assert "UTF-8" in refused(bridge, b'{"tool": "query_balance", "x": "\xff"}')
    assert "one line of JSON" in refused(bridge, b'{"tool": "query_balance", "n": ' + b"9" * 5000)


def test_a_strict_request_is_served(bridge):
    reply = bridge.answer(b'{"id": 7, "tool": "query_balance", "args": {}}')
    assert reply["id"] == 7 and reply["result"]["ok"] is True and bridge.calls == 1


def test_nesting_ignores_brackets_inside_strings():
    for value, depth in [
        ({"a": '[[[["[[\\', "b": [[1]]}, 3),
        ([[[{"x": [1, {"y": "]]]]"}]}]]], 6),
        ("}{[", 0),
        ([], 1),
    ]:
        assert _nesting(json.dumps(value)) == depth


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=20,
)


def depth_of(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    return 0


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_nesting_matches_the_parsed_depth(value):
    assert _nesting(json.dumps(value)) == depth_of(value)
    assert _nesting(json.dumps(value, ensure_ascii=False)) == depth_of(value)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_no_line_makes_the_parent_raise(market, line):
    bridge = ToolBridge(Session(market[0], market[1], 1))
    reply = bridge.answer(line)
    assert set(reply) == {"id", "result"} and isinstance(reply["result"], dict)
    json.dumps(reply).encode("utf-8")
