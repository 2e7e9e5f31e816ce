"""Answers of the hot routes (tool calls, observations) as JSON, without FastAPI's generic
encoding pass: tool results are plain JSON types already (a tools test makes sure), so one
`json.dumps` is all they need."""

from __future__ import annotations

import json
from typing import Any

from fastapi.responses import JSONResponse

__all__ = ["JSONResponse", "fast_json"]


class _Json(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def fast_json(content: dict[str, Any], status_code: int = 200) -> JSONResponse:
    return _Json(content, status_code=status_code)
