"""The run record's file names and column types (docs/run-record.md): one definition, used by
the run writer (`record.tables`) and by everything that reads records (`metrics.record`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

RUN_FILE = "run.json"
METRICS_FILE = "metrics.json"  # written last, from the other files (merchantbench.metrics)
TRACE_FILE = "trace.jsonl"
TRANSCRIPT_FILE = "transcript.jsonl"  # what each window showed and each call answered
MODEL_CALLS_FILE = "model_calls.jsonl"  # one line per model call of an LLM agent
MODEL_WORDS_FILE = "model_words.jsonl.gz"  # what the model said at each call (record/words.py)
# A run played from outside: the protocol's state after each acknowledged call, and the open
# window's answers at the last checkpoint (runs/journal.py); removed once the run is finished.
JOURNAL_FILE = "journal.jsonl"
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
# A trace line is one `merchantbench.record.trace.TraceEntry`.

ARROW_TYPES = {
    "int": pa.int64(), "money": pa.int64(), "float": pa.float64(), "bool": pa.bool_(),
    "str": pa.string(),
}  # fmt: skip


def arrow_table(name: str, columns: Mapping[str, Any]) -> pa.Table:
    """A Parquet file's table with exactly the contract's columns, in its order and types.
    `KeyError` names a missing column."""
    return pa.table({
        col: arrow_array(columns[col], kind) for col, kind in PARQUET_SCHEMAS[name].items()
    })  # fmt: skip


_NUMPY_OF_KIND = {"int": np.int64, "money": np.int64, "float": np.float64}


def arrow_array(values: Any, kind: str) -> pa.Array:
    """One column as an Arrow array without nulls, built from its buffers.

    `pa.array` would do, but it asks pandas whether the values are pandas objects, and where
    pandas is installed (an extra pulls it in) that import costs a run ~0.4 s at its end. The
    arrays are the same: each column of the contract is a fixed-width number, a bool or a str.
    """
    arrow_type = ARROW_TYPES[kind]
    if kind in _NUMPY_OF_KIND:
        data = np.ascontiguousarray(values, dtype=_NUMPY_OF_KIND[kind])
        return pa.Array.from_buffers(arrow_type, len(data), [None, pa.py_buffer(data)])
    if kind == "bool":
        flags = np.asarray(values, dtype=bool)
        bits = np.packbits(flags, bitorder="little")
        return pa.Array.from_buffers(arrow_type, len(flags), [None, pa.py_buffer(bits)])
    if any(v is None or not isinstance(v, str) for v in values):
        return pa.array(values, type=arrow_type)  # nulls or non-text: as pyarrow converts them
    texts = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(texts) + 1, dtype=np.int32)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    blob = b"".join(texts)
    return pa.Array.from_buffers(
        arrow_type, len(texts), [None, pa.py_buffer(offsets), pa.py_buffer(blob)]
    )
