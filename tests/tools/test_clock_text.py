"""The one "Day N HH:00" rendering and its one parser, and the agents' reading of a snapshot."""

from __future__ import annotations

import pytest

from merchantbench.agents.baselines.tables import open_store_hour
from merchantbench.tools.context import clock_text, parse_clock_text


def test_parse_reads_back_every_hour_of_a_year() -> None:
    assert all(parse_clock_text(clock_text(t)) == t for t in range(0, 365 * 24 + 48))


@pytest.mark.parametrize(
    "text", ["", "Day 0 08:00", "Day 3 24:00", "Day 3 8:00", "Day 3 08:30", "day 3 08:00",
             "Day 3 08:00 ", "Day -1 08:00", "Day x 08:00"],
)  # fmt: skip
def test_parse_refuses_anything_else(text: str) -> None:
    assert parse_clock_text(text) is None


def test_open_store_hour() -> None:
    snapshot = {"ok": True, "store": "open", "at": "Day 2 12:00"}
    assert open_store_hour(snapshot) == 36
    assert open_store_hour({**snapshot, "store": "closed"}) is None
    assert open_store_hour({**snapshot, "at": "noon"}) is None
    assert open_store_hour({"ok": False, "error": {"code": "limit"}}) is None
