"""Reading the compact tables tools return ({"columns": [...], "rows": [[...]]}) as dicts."""

from __future__ import annotations

from typing import Any


def rows_of(result: dict[str, Any], key: str | None = None) -> list[dict[str, Any]]:
    """The rows of a tool's table (or of `result[key]`) as column → value dicts; [] on error."""
    if not result.get("ok", True):
        return []
    block = result[key] if key else result
    if not isinstance(block, dict) or "columns" not in block:
        return []
    columns = block["columns"]
    return [dict(zip(columns, row, strict=True)) for row in block["rows"]]
