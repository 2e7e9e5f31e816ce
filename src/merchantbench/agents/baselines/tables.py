"""Reading tool answers: the compact tables tools return ({"columns": [...], "rows": [[...]]})
as dicts, and the store's state in a snapshot."""

from __future__ import annotations

from typing import Any

from merchantbench.tools.context import parse_clock_text


def rows_of(result: dict[str, Any], key: str | None = None) -> list[dict[str, Any]]:
    """The rows of a tool's table (or of `result[key]`) as column → value dicts; [] on error."""
    if not result.get("ok", True):
        return []
    block = result[key] if key else result
    if not isinstance(block, dict) or "columns" not in block:
        return []
    columns = block["columns"]
    return [dict(zip(columns, row, strict=True)) for row in block["rows"]]


def open_store_hour(snapshot: dict[str, Any]) -> int | None:
    """The hour a `get_store_snapshot` answer was taken at, or None when the call was refused,
    the store is closed or its time does not read as "Day N HH:00"."""
    if not snapshot.get("ok") or snapshot.get("store") != "open":
        return None
    return parse_clock_text(snapshot.get("at", ""))
