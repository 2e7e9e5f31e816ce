"""The one typed trace entry (merchantbench.record.trace): what the session writes is what replay
and the metrics read, field for field and byte for byte."""

from __future__ import annotations

import json

import pytest

from merchantbench.record.trace import FIELDS, TraceEntry, TraceEntryError
from merchantbench.runs.transcript import json_line
from merchantbench.scenario import load_scenario
from merchantbench.session import Session


def test_a_sessions_lines_are_trace_entries_and_read_back_to_the_same_bytes() -> None:
    session = Session.open(load_scenario("smoke"), seed=3)
    session.call("query_balance", {})
    session.call("no_such_tool", {"x": 1})
    session.call("search_products", "{not json")
    session.call("end_of_step", {}, idempotency_key="k-1")
    session.record_framework_call("note", {"text": "hi"}, ok=False, error="too_long")
    assert [list(entry) for entry in session.trace[:3]] == [list(FIELDS[:-1])] * 3
    assert session.trace[3]["idempotency_key"] == "k-1"
    for entry in session.trace:
        line = json_line(entry)[:-1]
        assert TraceEntry.parse(line).json_dict() == entry
        assert json_line(TraceEntry.parse(line).json_dict())[:-1] == line
    assert TraceEntry.parse(json_line(session.trace[1])).error == "unknown_tool"
    assert TraceEntry.parse(json_line(session.trace[4])).origin == "framework"


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"seq": None}, "'seq' is of the wrong type"),
        ({"ok": 1}, "'ok' is of the wrong type"),
        ({"window": True}, "'window' is of the wrong type"),
        ({"origin": "robot"}, "unknown origin 'robot'"),
        ({"idempotency_key": 5}, "'idempotency_key' is of the wrong type"),
    ],
)
def test_a_damaged_entry_is_refused_naming_its_field(change: dict, why: str) -> None:
    line = {"seq": 1, "window": 0, "t": 0, "tool": "query_balance", "args": {}, "ok": True,
            "error": None, "origin": "env", "forced": False} | change  # fmt: skip
    with pytest.raises(TraceEntryError, match=why):
        TraceEntry.parse(json.dumps(line))
    del line["forced"]
    with pytest.raises(TraceEntryError, match="'forced' is missing|wrong type|unknown origin"):
        TraceEntry.parse(json.dumps(line))
    with pytest.raises(TraceEntryError, match="not JSON"):
        TraceEntry.parse("{torn")
    with pytest.raises(TraceEntryError, match="not a trace entry"):
        TraceEntry.parse("[1]")
