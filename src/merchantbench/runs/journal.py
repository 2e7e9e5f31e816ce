"""Acknowledged means durable: the write-ahead record of a run played from outside the process.

A host that answers someone outside its process (the HTTP server, both protocols and every
merchant's channel; `merchantbench mcp`; the playground) acknowledges each request only once
its calls are on disk: `RunLifecycle.acknowledge()` syncs the transcript and the trace (the
trace is the log: one line per call, with the arguments, the caller's key and the answer's
code) and, when the protocol's memory changed (the driver's `state()`: call-id ledger, turns,
reported usage), appends that state to `journal.jsonl`. A resume then loads the last
checkpoint and replays the trace lines after it through the session, checking that each call
gives its logged line again, so the store reaches exactly the acknowledged state; the driver
takes back its last journaled state.

`journal.jsonl` (removed once the record is finished), strict JSON lines:

    {"seq":120,"base":true,"driver":{...},"answers":{"window":7,"calls":{...}}}   at a checkpoint
    {"seq":131,"driver":{...}}                                 the driver's state after call 131

Exactly once: `AnswerLog` keeps the open window's answers by call key (the artifact
protocol's `{agent}:{hour}:{call id}`, the JSON API's and the page's `Idempotency-Key`). A call
retried with the same key and the same arguments is answered from it by the session
(`Session.answered`): no second trace line, no second count. It is rebuilt by the replay and
saved in each checkpoint's base line.

What it does not cover: a request in flight when the process died (not answered) may or may
not be in the record; its client retries it (same key: answered once). An in-process run (the
agent dies with the process: nothing was acknowledged outside) keeps the batched syncs of its
checkpoints and resumes from its checkpoint as before (docs/run-record.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

from merchantbench.record.files import atomic_write_bytes
from merchantbench.record.schema import JOURNAL_FILE
from merchantbench.runs.spec import RunError
from merchantbench.runs.transcript import json_line
from merchantbench.session import Session
from merchantbench.tools.answer_log import AnswerLog
from merchantbench.tools.errors import failure

RAW = "_raw"  # what the trace keeps of input refused before any tool saw it (session._record)

__all__ = ["AnswerLog", "Journal", "JournalMismatch", "LoggedCalls"]


class JournalMismatch(RunError):
    """A logged call did not give its logged line again: the record and the code disagree."""


class Journal:
    """`journal.jsonl` of one run directory (see the module docstring)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / JOURNAL_FILE
        self._file: TextIO | None = None
        self._driver: str | None = None  # the driver state last journaled, as JSON text
        self._seq: Any = 0  # the last trace entry journaled as acknowledged
        self.points: list[Any] = []  # every acknowledged point, in order (`load`)
        self._line = ""  # the last base line

    def load(self) -> tuple[Any, Any, Any]:
        """The last acknowledged trace entry (0: none; a market journals each merchant's, as a
        dict), the driver's last journaled state (None: none journaled) and the answers of the
        last base line (`AnswerLog.to_json`, or a market's dict of them). Every acknowledged
        point (base lines too) is kept in `points`, in order. A torn last line (the process died
        writing it: that request was never answered) is ignored, and cut off the file: the next
        line appended starts a line of its own."""
        acknowledged: Any = 0
        driver: Any = None
        answers: Any = None
        self.points = []
        if not self.path.is_file():
            return acknowledged, driver, answers
        data = self.path.read_bytes()
        kept = 0  # the bytes of the whole lines read
        for line in data.split(b"\n")[:-1]:  # what follows the last newline is torn
            try:
                record = json.loads(line)
            except ValueError:
                break
            if not isinstance(record, dict) or not isinstance(record.get("seq"), int | dict):
                break
            kept += len(line) + 1
            acknowledged = record["seq"]
            if "driver" in record:
                driver = record["driver"]
            if record.get("base"):
                answers = record.get("answers")
            self.points.append(acknowledged)
        if kept < len(data):
            os.truncate(self.path, kept)
        self._seq = acknowledged
        self._driver = None if driver is None else json.dumps(driver, sort_keys=True)
        return acknowledged, driver, answers

    def rebase(self, seq: Any, driver: str | None, answers: Any) -> None:
        """A checkpoint at trace entry `seq` is about to be saved: append its base line, with
        the open window's `answers` (`AnswerLog.to_json`, or a market's dict of them), synced.
        Once the checkpoint is saved, `compact` drops what came before (a kill in between
        resumes from the older checkpoint, with every point still there)."""
        record: dict[str, Any] = {"seq": seq, "base": True, "answers": answers}
        record["driver"] = None if driver is None else json.loads(driver)
        self._line = json_line(record)
        self._append(self._line)
        self._driver, self._seq = driver, seq

    def compact(self) -> None:
        """The checkpoint of the last base line is saved: keep that line alone (atomically)."""
        self.close()
        atomic_write_bytes(self.path, self._line.encode())

    def _append(self, line: str) -> None:
        if self._file is None:
            self._file = open(self.path, "a")  # noqa: SIM115 (closed in close)
        self._file.write(line)
        self._file.flush()
        os.fsync(self._file.fileno())

    def note(self, seq: Any, driver: str | None) -> None:
        """Journal that the calls up to trace entry `seq` are acknowledged (their lines are on
        disk already), with the driver's state if it changed; synced. Nothing new: no line."""
        if seq == self._seq and driver == self._driver:
            return
        record: dict[str, Any] = {"seq": seq}
        if driver != self._driver:
            record["driver"] = json.loads(driver or "null")
        self._append(json_line(record))
        self._driver, self._seq = driver, seq

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def remove(self) -> None:
        """The record is finished: nothing is left to replay."""
        self.close()
        self.path.unlink(missing_ok=True)


class LoggedCalls:
    """The trace lines after a checkpoint, replayed on resume: each call the session makes
    again must give its logged line (`check`, the trace sink while replaying)."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.entries = entries
        self._at = 0
        self.trying = False  # a mismatch is noted in `matched`, not raised (`replay_raw`)
        self.matched = True
        self._next = 0  # the next entry to replay
        self._session: Session
        self._recorder: Any = None
        self._transcribed = 0
        self._noted: int | None = None

    def replay(self, session: Session, transcribed: int, noted: int | None) -> None:
        """Make every logged call again, as its caller made it, with the session's trace sink
        set to `check`. The transcript (the session's recorder) already holds the answers up to
        entry `transcribed` and the observation of window `noted`: it is told only of later
        calls, and of the open window's observation where it lacks it."""
        self.start(session, transcribed, noted)
        self.advance(None)
        self.finish()

    def start(self, session: Session, transcribed: int, noted: int | None) -> None:
        """Begin a replay made in parts (`advance`, then `finish`): a market's merchants
        replay in the order their calls were acknowledged."""
        self._session, self._transcribed, self._noted = session, transcribed, noted
        self._recorder, session.recorder = session.recorder, None

    def advance(self, upto: int | None) -> None:
        """Replay the logged calls up to trace entry `upto` (None: all)."""
        session, recorder = self._session, self._recorder
        while self._next < len(self.entries):
            entry = self.entries[self._next]
            if upto is not None and entry["seq"] > upto:
                return
            self._next += 1
            if (
                recorder is not None
                and session.recorder is None
                and entry["seq"] > self._transcribed
            ):
                session.recorder = recorder
                if self._noted != session.window:
                    recorder.window_opened(session)
            self._replay_one(session, entry)

    def finish(self) -> None:
        session, recorder = self._session, self._recorder
        if recorder is not None and session.recorder is None and self._noted != session.window:
            recorder.window_opened(session)
        session.recorder = recorder

    def _replay_one(self, session: Session, entry: dict[str, Any]) -> None:
        if entry["origin"] == "framework":
            session.record_framework_call(entry["tool"], entry["args"], entry["ok"], entry["error"])
            return
        session.env_origin = entry["origin"]
        args = entry["args"]
        if not entry["ok"] and len(args) == 1 and isinstance(args.get(RAW), str):
            self._replay_raw(session, entry)
            return
        session.call(entry["tool"], args, entry.get("idempotency_key"), forced=entry["forced"])

    def _replay_raw(self, session: Session, entry: dict[str, Any]) -> None:
        """A refused call whose arguments the trace keeps as `{"_raw": text}`: input refused
        before any tool saw it (the trace keeps a safe text of it, recorded again as refused),
        or a call that really sent `_raw` (tried as sent first). Either way only the window's
        call count changed."""
        memory, recorder = session.memory, session.recorder
        counted, seq = memory.window_calls, memory.seq
        session.recorder, self.trying = None, True
        try:
            result = session.call(entry["tool"], entry["args"], forced=entry["forced"])
        finally:
            session.recorder, self.trying = recorder, False
        if self.matched:
            if recorder is not None:
                recorder.answered(entry, result)
            return
        memory.window_calls, memory.seq = counted, seq
        self._at -= 1
        refusal = failure(entry["error"] or "invalid_argument", "refused (input not recorded)")
        session.refuse(entry["tool"], entry["args"][RAW], refusal, forced=entry["forced"])

    @classmethod
    def between(cls, trace: Path, seq: int, acknowledged: int) -> LoggedCalls:
        """The lines of entries `seq`+1 … `acknowledged`, in order.

        Raises:
            JournalMismatch: the trace lacks an acknowledged entry (damaged or cut by hand).
        """
        entries: list[dict[str, Any]] = []
        if acknowledged <= seq:
            return cls(entries)
        lines = trace.read_bytes().split(b"\n") if trace.is_file() else []
        for number, line in enumerate(lines[seq:acknowledged], start=seq + 1):
            try:
                entry = json.loads(line)
            except ValueError:
                entry = None
            if not isinstance(entry, dict) or entry.get("seq") != number:
                raise JournalMismatch(
                    f"cannot resume: {trace.name} line {number} is damaged or missing, but the "
                    f"journal says entries up to {acknowledged} were acknowledged"
                )
            entries.append(entry)
        return cls(entries)

    def check(self, produced: dict[str, Any]) -> None:
        """The trace sink while replaying: the call made again gave `produced`."""
        logged = self.entries[self._at] if self._at < len(self.entries) else None
        self._at += 1
        self.matched = produced == logged
        if not self.matched and not self.trying:
            raise JournalMismatch(
                f"cannot resume: logged call {None if logged is None else logged['seq']} did "
                f"not replay as logged ({_short(logged)} became {_short(produced)})"
            )


def _short(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "nothing"
    return f"{entry.get('tool')} ok={entry.get('ok')} error={entry.get('error')}"
