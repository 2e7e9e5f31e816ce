"""Exactly once: the open window's answered calls by key (issue 32).

A call made with a key beside its arguments (the artifact protocol's `{agent}:{hour}:{call id}`,
an `Idempotency-Key` header, an MCP `_meta` key, `surface.call(..., idempotency_key=)`) and made
again with the same key and the same arguments in the same window is answered from here by
`Session.call`: no second trace line, no second count, so the metrics count distinct calls. The
tool layer's own replay (`tools/calling.py`) remembers successful writes across windows in the
store's state; this log keeps every answer of the open window, reads and refusals too, and is
snapshotted with the session (a run played from outside also journals it, runs/journal.py).

The keyed call that closed a window (`end_of_step`) is also kept into the next window: its answer
may be the one a client lost, and the client's retry arrives after the window it closed, in the
next one (or after the run's end). Answered from here, the retry does not close that window too.
What this does not cover: a retry made two or more windows later acts again (closing the window
then open); a write retried after its window closed is answered by the tool layer's own replay,
or refused as late with `X-Window` (tools/window_bound.py).
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
    """The open window's answered keyed calls (the session's `AnsweredCalls`), and the keyed
    call that closed the window before (`closing`)."""

    def __init__(
        self,
        window: int = -1,
        calls: dict[str, dict[str, Any]] | None = None,
        closing: dict[str, Any] | None = None,
    ) -> None:
        self.window = window
        self.calls: dict[str, dict[str, Any]] = calls or {}
        self.closing = closing  # {"window", "key", "call", "answer"} of the last keyed close
        self.replaying = False  # a resume makes the logged calls again: none is answered here

    def lookup(self, window: int, key: str, tool: Any, args: Any) -> dict[str, Any] | None:
        """The answer of this keyed call made before in `window`, or of the keyed call that
        closed the window before it; None when neither (or for another call with this key: the
        tool layer answers the conflict)."""
        if self.replaying:
            return None
        known = self.calls.get(key) if window == self.window else None
        closing = self.closing
        if known is None and closing is not None and closing["key"] == key:
            known = closing if window == closing["window"] + 1 else None
        if known is None or known["call"] != call_fingerprint(tool, args):
            return None
        answer: dict[str, Any] = json.loads(known["answer"])
        return answer

    def keep(
        self,
        window: int,
        key: str,
        tool: Any,
        args: Any,
        result: dict[str, Any],
        closes: bool = False,
    ) -> None:
        """Keep a keyed call's answer (`closes`: the call closed `window`)."""
        if window != self.window:
            self.window, self.calls = window, {}
        fingerprint = call_fingerprint(tool, args)
        if fingerprint is None:
            return
        kept = {
            "call": fingerprint,
            "answer": json.dumps(result, ensure_ascii=False, separators=(",", ":")),
        }
        self.calls.setdefault(key, kept)
        if closes:
            self.closing = {"window": window, "key": key, **kept}

    def take(self, other: AnswerLog) -> None:
        """Hold what `other` holds (in place: the session and the journal share this log)."""
        self.window, self.calls, self.closing = other.window, dict(other.calls), other.closing

    def __bool__(self) -> bool:
        """Whether it holds anything (a snapshot without it is the older format)."""
        return bool(self.calls) or self.closing is not None

    def to_json(self) -> dict[str, Any]:
        saved: dict[str, Any] = {"window": self.window, "calls": self.calls}
        if self.closing is not None:
            saved["closing"] = self.closing
        return saved

    @classmethod
    def from_json(cls, saved: Any) -> AnswerLog:
        if not isinstance(saved, dict):
            return cls()
        closing = saved.get("closing")
        valid = isinstance(closing, dict) and {"window", "key", "call", "answer"} <= set(closing)
        return cls(
            int(saved.get("window", -1)),
            dict(saved.get("calls") or {}),
            dict(closing) if valid else None,  # type: ignore[arg-type]
        )
