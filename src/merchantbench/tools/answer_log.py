"""Exactly once: the open window's answered calls by key (issue 32).

A call made with a key beside its arguments (the artifact protocol's `{agent}:{hour}:{call id}`,
an `Idempotency-Key` header, an MCP `_meta` key, `surface.call(..., idempotency_key=)`) and made
again with the same key and the same arguments in the same window is answered from here by
`Session.call`: no second trace line, no second count, so the metrics count distinct calls. The
tool layer's own replay (`tools/calling.py`) remembers successful writes across windows in the
store's state; this log keeps every answer of the open window, reads and refusals too, and is
snapshotted with the session (a run played from outside also journals it, runs/journal.py).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["AnswerLog", "call_fingerprint"]


def call_fingerprint(tool: Any, args: Any) -> str | None:
    """The call as canonical text: the same call however its arguments were spelled (None for
    arguments that are not JSON at all: such a call is never answered from the log)."""
    try:
        if isinstance(args, str):
            args = json.loads(args) if args.strip() else {}
        elif args is None:
            args = {}
        return f"{tool}:{json.dumps(args, sort_keys=True, separators=(',', ':'))}"
    except (TypeError, ValueError, RecursionError):
        return None


class AnswerLog:
    """The open window's answered keyed calls (the session's `AnsweredCalls`)."""

    def __init__(self, window: int = -1, calls: dict[str, dict[str, Any]] | None = None) -> None:
        self.window = window
        self.calls: dict[str, dict[str, Any]] = calls or {}
        self.replaying = False  # a resume makes the logged calls again: none is answered here

    def lookup(self, window: int, key: str, tool: Any, args: Any) -> dict[str, Any] | None:
        if self.replaying or window != self.window or key not in self.calls:
            return None
        known = self.calls[key]
        if known["call"] != call_fingerprint(tool, args):
            return None  # another call with this key: the tool layer answers the conflict
        answer: dict[str, Any] = json.loads(known["answer"])
        return answer

    def keep(self, window: int, key: str, tool: Any, args: Any, result: dict[str, Any]) -> None:
        if window != self.window:
            self.window, self.calls = window, {}
        fingerprint = call_fingerprint(tool, args)
        if fingerprint is not None and key not in self.calls:
            answer = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
            self.calls[key] = {"call": fingerprint, "answer": answer}

    def take(self, other: AnswerLog) -> None:
        """Hold what `other` holds (in place: the session and the journal share this log)."""
        self.window, self.calls = other.window, dict(other.calls)

    def to_json(self) -> dict[str, Any]:
        return {"window": self.window, "calls": self.calls}

    @classmethod
    def from_json(cls, saved: Any) -> AnswerLog:
        if not isinstance(saved, dict):
            return cls()
        return cls(int(saved.get("window", -1)), dict(saved.get("calls") or {}))
