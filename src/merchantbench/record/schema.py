"""The run record's file names and column types (docs/run-record.md): one definition, used by
the run writer (`record.tables`) and by everything that reads records (`metrics.record`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

RUN_FILE = "run.json"
METRICS_FILE = "metrics.json"  # written last, from the other files (merchantbench.metrics)
TRACE_FILE = "trace.jsonl"
TRANSCRIPT_FILE = "transcript.jsonl"  # what each window showed and each call answered
MODEL_CALLS_FILE = "model_calls.jsonl"  # one line per model call of an LLM agent
MODEL_WORDS_FILE = "model_words.jsonl.gz"  # what the model said at each call (record/words.py)
TIMESERIES_FILE = "timeseries.parquet"
ORDERS_FILE = "orders.parquet"
DAILY_FILE = "daily.parquet"
LISTINGS_FILE = "listings.parquet"

# Column kinds: "int" (hours, ids, counts), "money" (integer fen), "float", "bool", "str".
PARQUET_SCHEMAS: dict[str, dict[str, str]] = {
    TIMESERIES_FILE: {
        "t": "int", "day": "int", "balance": "money", "deposit": "money",
        "in_transit": "money", "receivable": "money", "net_assets": "money",
        "rating": "float", "stars": "int", "active_listings": "int",
    },
    ORDERS_FILE: {
        "order_id": "int", "product_id": "str", "product_type": "str", "sale_price": "money",
        "cost": "money", "placed_t": "int", "ship_t": "int", "cancel_t": "int",
        "delivered_t": "int", "resolved_t": "int", "late": "bool", "outcome": "str",
        "fees": "money", "fines_assessed": "money", "fines_collected": "money",
    },
    DAILY_FILE: {"day": "int", "rating": "float", "stars": "int"},
    LISTINGS_FILE: {
        "product_id": "str", "product_type": "str", "listed_t": "int", "delisted_t": "int",
        "first_price": "money", "last_price": "money", "cost_at_listing": "money",
    },
}  # fmt: skip
TRACE_SCHEMA: dict[str, str] = {
    "seq": "int", "window": "int", "t": "int", "tool": "str", "ok": "bool",
    "error": "str", "origin": "str", "forced": "bool", "args": "object",
}  # fmt: skip
TRACE_REQUIRED = ("window", "t", "tool", "ok", "origin")

ARROW_TYPES = {
    "int": pa.int64(), "money": pa.int64(), "float": pa.float64(), "bool": pa.bool_(),
    "str": pa.string(),
}  # fmt: skip


def arrow_table(name: str, columns: Mapping[str, Any]) -> pa.Table:
    """A Parquet file's table with exactly the contract's columns, in its order and types.
    `KeyError` names a missing column."""
    return pa.table({
        col: pa.array(columns[col], type=ARROW_TYPES[kind])
        for col, kind in PARQUET_SCHEMAS[name].items()
    })  # fmt: skip
