"""Token usage an agent reports: checked and normalised into the record we keep."""

from __future__ import annotations

import math
from typing import Any

from merchantbench.serve.act import ProtocolError

__all__ = ["usage_record"]

TEXT_FIELDS = {"usage_id": 200, "source": 100, "model": 200, "provider": 100,
               "cost_status": 100, "cost_source": 200}  # fmt: skip
MAX_USAGE_KEYS = 50


def _bad(message: str) -> ProtocolError:
    return ProtocolError(400, "invalid_usage", message)


def _text(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or len(value.strip()) > TEXT_FIELDS[name]:
        raise _bad(f"{name} must be a string of at most {TEXT_FIELDS[name]} characters")
    return value.strip()


def _token_usage(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or len(value) > MAX_USAGE_KEYS:
        raise _bad(f"token_usage is required: an object of at most {MAX_USAGE_KEYS} counts")
    if not all(isinstance(k, str) and len(k) <= 64 for k in value):
        raise _bad("token_usage keys must be short strings")
    return value


def _step(value: Any, hour: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= hour:
        raise _bad(f"step must be an hour between 0 and the current one ({hour})")
    return value


def usage_record(body: Any, hour: int) -> dict[str, Any]:
    """The record of one usage report. Raises `ProtocolError` (400) when it is malformed."""
    if not isinstance(body, dict):
        raise _bad("the body must be a JSON object")
    record: dict[str, Any] = {name: _text(body, name) for name in TEXT_FIELDS}
    if not record["usage_id"]:
        raise _bad("usage_id is required")
    record["source"] = record["source"] or "auxiliary"
    record["token_usage"] = _token_usage(body.get("token_usage"))
    record["step"] = _step(body.get("step"), hour)
    cost = body.get("cost_usd")
    if cost is not None and (
        isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost)
    ):
        raise _bad("cost_usd must be a finite number")
    record["cost_usd"] = cost
    return record
