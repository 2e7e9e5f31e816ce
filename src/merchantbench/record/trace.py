"""One line of `trace.jsonl`: the typed entry the session writes for every call, and that replay
and the metrics read back (docs/run-record.md).

The field order of `TraceEntry` is the key order of a line, so a record's bytes depend on this
declaration alone:

    {"seq":1,"window":0,"t":0,"tool":"query_balance","args":{},"ok":true,"error":null,
     "origin":"env","forced":false}

`idempotency_key` is written only when a key was sent beside the arguments (an HTTP header);
a key sent among the arguments is in `args`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any, Literal, get_args

Origin = Literal["env", "human", "framework"]
ORIGINS: tuple[str, ...] = get_args(Origin)
"""Who made a call: an agent through the environment (`env`), a person at the web playground
(`human`), or an agent harness's own tool (`framework`, never an environment call)."""
ENV_ORIGINS: tuple[str, ...] = ("env", "human")
"""The origins of environment calls (the metrics count both)."""


class TraceEntryError(ValueError):
    """A value that is not a trace entry; the message names the field at fault."""


# The JSON type each field must have (a bool is not an int here, as in the file's writer).
FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "seq": int, "window": int, "t": int, "tool": str, "args": dict, "ok": bool,
    "error": (str, type(None)), "origin": str, "forced": bool,
    "idempotency_key": (str, type(None)),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class TraceEntry:
    """One recorded call.

    Attributes:
        seq: 1-based number of the entry in its trace.
        window: Decision window the call was made in.
        t: Simulated hour of that window.
        tool: The tool's name (for refused input, a safe rendering of what was sent).
        args: The arguments as validated JSON, or `{"_raw": text}` for input refused before
            any tool saw it.
        ok: Whether the call succeeded.
        error: The refusal code when it did not (`merchantbench.tools.refusals.Refusal`).
        origin: `env`, `human` or `framework` (see `ORIGINS`).
        forced: The harness closed the window on the agent's behalf.
        idempotency_key: A key sent beside the arguments, if any.
    """

    seq: int
    window: int
    t: int
    tool: str
    args: dict[str, Any]
    ok: bool
    error: str | None
    origin: str
    forced: bool
    idempotency_key: str | None = None

    def json_dict(self) -> dict[str, Any]:
        """The entry as its line holds it, keys in line order (what a trace sink receives)."""
        line: dict[str, Any] = {
            "seq": self.seq,
            "window": self.window,
            "t": self.t,
            "tool": self.tool,
            "args": self.args,
            "ok": self.ok,
            "error": self.error,
            "origin": self.origin,
            "forced": self.forced,
        }
        if self.idempotency_key is not None:
            line["idempotency_key"] = self.idempotency_key
        return line

    @classmethod
    def from_json_dict(cls, value: Any) -> TraceEntry:
        """The entry a decoded line holds.

        Raises:
            TraceEntryError: not an object, a field missing or of the wrong JSON type, an
                unknown origin.
        """
        if not isinstance(value, dict):
            raise TraceEntryError("not a trace entry (a JSON object)")
        for name in FIELDS:
            if name not in value and name != "idempotency_key":
                raise TraceEntryError(f"{name!r} is missing")
            kind = FIELD_TYPES[name]
            item = value.get(name)
            if not isinstance(item, kind) or (kind is int and isinstance(item, bool)):
                raise TraceEntryError(f"{name!r} is of the wrong type")
        if value["origin"] not in ORIGINS:
            raise TraceEntryError(f"unknown origin {value['origin']!r}")
        checked: dict[str, Any] = {name: value.get(name) for name in FIELDS}
        return cls(**checked)

    @classmethod
    def parse(cls, text: str) -> TraceEntry:
        """The entry of one line (without its newline).

        Raises:
            TraceEntryError: the line is not JSON, or not a trace entry.
        """
        try:
            value = json.loads(text)
        except ValueError:
            raise TraceEntryError("not JSON") from None
        except RecursionError:  # the parser's own error, not a ValueError
            raise TraceEntryError("not JSON (nested too deeply to read)") from None
        return cls.from_json_dict(value)


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(TraceEntry))
"""The entry's fields in line order."""
