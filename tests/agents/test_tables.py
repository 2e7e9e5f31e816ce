"""Reading tool tables: whole rows as dicts, or a few columns as tuples."""

from __future__ import annotations

from merchantbench.agents.baselines.tables import columns_of, rows_of

TABLE = {"ok": True, "columns": ["product_id", "price", "stock"], "rows": [["a", 1.5, "low"]]}


def test_columns_of_picks_the_named_columns_in_the_order_asked():
    assert columns_of(TABLE, "stock", "product_id") == [("low", "a")]
    assert columns_of(TABLE, "price") == [(row["price"],) for row in rows_of(TABLE)]


def test_columns_of_a_refusal_or_a_missing_column_is_empty():
    assert columns_of({"ok": False, "error": {"code": "limit"}}, "price") == []
    assert columns_of(TABLE, "rating") == []
    assert columns_of({"ok": True, "scope": "new"}, "price") == []
