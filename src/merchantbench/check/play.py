"""Playing the action script on a store run, and the recording the checks judge.

A `Player` drives one `StoreRun` with the script: it sends each call through the agent side
and records, from the host side, the state hash after every call and the ledger at every
window's opening. It never raises for what the run does: an exception of the adapter or a
result the script cannot read ends the recording with `failure` set.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from merchantbench.check.adapter import LedgerReport, StoreRun
from merchantbench.check.script import Call, action_script
from merchantbench.tools.toolset import END_OF_STEP

__all__ = ["Player", "Recording", "Step", "transcript_sha256"]


@dataclass(frozen=True, slots=True)
class Step:
    """One call of the script and what came of it."""

    window: int
    hour: int
    call: Call
    result: dict[str, Any]
    hash_before: str
    hash_after: str

    @property
    def where(self) -> str:
        return f"window {self.window}, {self.call.tool}"


@dataclass
class Recording:
    """Everything one play saw, in order."""

    brief: str = ""
    tools: list[str] = field(default_factory=list)
    writes: set[str] = field(default_factory=set)  # tools that may change state
    steps: list[Step] = field(default_factory=list)
    observations: list[tuple[int, str]] = field(default_factory=list)  # (window, text)
    ledgers: dict[int, LedgerReport] = field(default_factory=dict)  # window → at its opening
    final_ledger: LedgerReport | None = None
    final_hash: str = ""
    failure: str | None = None

    def window_hashes(self) -> list[tuple[int, str]]:
        """(window, state hash after its last call) for every window played."""
        last: dict[int, str] = {}
        for step in self.steps:
            last[step.window] = step.hash_after
        return sorted(last.items())


def transcript_sha256(steps: list[Step]) -> str:
    """SHA-256 of the calls and results, to compare plays (and, later, front ends)."""
    h = hashlib.sha256()
    for step in steps:
        call = step.call
        line = [call.tool, call.args, call.idempotency_key, step.result]
        h.update(json.dumps(line, sort_keys=True, ensure_ascii=False, default=repr).encode())
    return h.hexdigest()


def tool_names(schemas: Any) -> list[str]:
    """Tool names from OpenAI function schemas; a malformed entry is skipped."""
    names = []
    for schema in schemas if isinstance(schemas, list) else []:
        function = schema.get("function") if isinstance(schema, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return names


def write_tools(schemas: list[dict[str, Any]]) -> set[str]:
    """Tools whose schema takes an idempotency key: the ones that may change state."""
    names = set()
    for schema in schemas:
        function = schema.get("function") or {}
        properties = (function.get("parameters") or {}).get("properties") or {}
        if "idempotency_key" in properties or function.get("name") == END_OF_STEP:
            names.add(str(function.get("name")))
    return names


class Player:
    """Plays the action script on one store run (see the module docstring)."""

    def __init__(self, run: StoreRun, max_calls: int) -> None:
        self.run = run
        self.max_calls = max_calls
        self.rec = Recording()
        self._last_window: int | None = None
        self._next: Call | None = None
        self._hash = ""

    def start(self, replay: Sequence[Step] = ()) -> None:
        """Open the script; `replay` feeds it results recorded before a snapshot, uncalled."""
        try:
            self.rec.brief = self.run.brief()
            schemas = self.run.tool_schemas()
            self.rec.tools, self.rec.writes = tool_names(schemas), write_tools(schemas)
            self._script = action_script(self.rec.tools)
            self._next = next(self._script)
            for step in replay:
                if step.call != self._next:
                    raise AssertionError(f"the script chose {self._next} instead of {step.call}")
                self._next = self._script.send(step.result)
            self._hash = self.run.state_hash()
        except Exception as exc:
            self._fail(exc)

    def play(self, until_window: int | None = None) -> None:
        """Play until the run is over, or until window `until_window` opens (not played)."""
        try:
            while self.rec.failure is None and not self._done(until_window):
                self._step()
            if self.rec.failure is None and self.run.over:
                self.rec.final_ledger = self.run.ledger()
                self.rec.final_hash = self.run.state_hash()
        except Exception as exc:
            self._fail(exc)

    def _done(self, until_window: int | None) -> bool:
        if self.run.over:
            return True
        window = self.run.window
        if window != self._last_window:
            if until_window is not None and window >= until_window:
                return True
            self._last_window = window
            self.rec.observations.append((window, self.run.observation()))
            self.rec.ledgers[window] = self.run.ledger()
        if len(self.rec.steps) >= self.max_calls:
            self.rec.failure = f"the run was not over after {self.max_calls} calls"
        return False

    def _step(self) -> None:
        call = self._next
        if call is None:
            raise AssertionError("the script has no call to make")
        window, hour = self.run.window, self.run.hour
        # A copy: whatever the adapter does to its arguments, the recorded call stays as sent.
        result = self.run.call(call.tool, copy.deepcopy(call.args), call.idempotency_key)
        after = self.run.state_hash()
        self.rec.steps.append(Step(window, hour, call, result, self._hash, after))
        self._hash = after
        if not isinstance(result, dict):
            raise TypeError(f"{call.tool} answered {type(result).__name__}, not a JSON object")
        self._next = self._script.send(result)

    def _fail(self, exc: Exception) -> None:
        where = f" at window {self._last_window}" if self._last_window is not None else ""
        self.rec.failure = f"{type(exc).__name__}{where}: {exc}"
