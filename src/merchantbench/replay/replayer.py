"""Replay a record's trace, call by call, in a fresh session (`Replayer`), checking each call's
trace entry and answer and each window's observation against the record as it goes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from merchantbench.record.schema import TRACE_FILE, TRANSCRIPT_FILE
from merchantbench.record.trace import TraceEntry
from merchantbench.refusals import Refusal
from merchantbench.replay.divergence import Divergence, first_difference
from merchantbench.replay.source import RecordSource, ReplayError, TraceLine, Transcript, parse_line
from merchantbench.runs.transcript import answer_line, json_line, observation_line
from merchantbench.session import Session
from merchantbench.tools.errors import failure

RAW = "_raw"  # what the trace keeps of input refused before any tool saw it (session._record)


class _Lines:
    """The session's recorder during a replay: the transcript lines the run would have written."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def answered(self, entry: dict[str, Any], answer: dict[str, Any] | None) -> None:
        self.lines.append(answer_line(entry["seq"], entry["window"], answer)[:-1])

    def window_opened(self, session: Session) -> None:
        line = observation_line(session)
        if line is not None:
            self.lines.append(line[:-1])


class Replayer:
    """A fresh session of the record's scenario, market and seed, and the record's trace.

    `run()` replays every call; `windows()` does too, pausing as each window opens. Each call's
    trace entry and the transcript's lines (its answer, the observation of a window it opened)
    are compared with the record; the first difference is kept in `divergence` and ends the
    replay. A record that cannot be read raises `ReplayError`.

    With `check_reads=False` (reaching a fork window: `snapshots(..., fast=True)`) the replay
    only rebuilds the store: a read the record says succeeded is counted, not made (reads
    change nothing but the window's call count and the sequence number), every other call is
    made and its trace entry compared with the record's as values, and neither the transcript
    nor the observations are rendered or read (`trace_lines` stays empty).

    Attributes:
        source: The record.
        session: The replayed session.
        divergence: The first difference found, or None.
        calls: Trace entries replayed.
        hostile: Calls refused before any tool saw them (hostile input): the trace keeps only
            a shortened text of their input, so their answers are taken from the record.
        trace_lines: The trace the replay produced, line by line (without newlines; only
            when reads are checked).
        transcript_lines: Transcript lines compared (0 when the record has no transcript).
    """

    def __init__(
        self,
        source: RecordSource,
        on_window: Callable[[Session], None] | None = None,
        *,
        merchant: tuple[Session, list[dict[str, Any]]] | None = None,
        check_reads: bool = True,
    ) -> None:
        """`merchant`: replay into a merchant's session of a market (`replay/market.py`),
        given with the list its trace entries are sunk into, instead of a fresh store."""
        self.source = source
        self.check_reads = check_reads
        if merchant is None:
            self._emitted: list[dict[str, Any]] = []
            self.session = Session.open(
                source.scenario, source.seed, source.catalog, trace_sink=self._emitted.append
            )
        else:
            self.session, self._emitted = merchant
        # Every call the trace holds is made again: none is answered from the log of retries
        # (a retry the run answered from it left no line; records older than it keep theirs).
        self.session.answered.replaying = True
        self._recorder = _Lines()
        self._transcript: Transcript | None = None
        if check_reads:
            self.session.recorder = self._recorder
            self._transcript = source.transcript()
        self._peeked: str | None = None
        self._on_window = on_window
        self.divergence: Divergence | None = None
        self.calls = 0
        self.hostile = 0
        self.trace_lines: list[str] = []
        self.transcript_lines = 0
        self._read_tools: frozenset[str] | None = None

    @property
    def has_transcript(self) -> bool:
        return self._transcript is not None

    def close(self) -> None:
        if self._transcript is not None:
            self._transcript.close()

    # --- the replay -----------------------------------------------------------------------------
    def windows(self) -> Iterator[int]:
        """Replay the whole trace, yielding the index of each window as it opens (before its
        first call; window 0 first). Stops at the first divergence."""
        self._recorder.window_opened(self.session)
        if self._check_transcript(None):
            return
        yield self.session.window
        lines = iter(self.source.trace())
        line = next(lines, None)
        while line is not None:
            following = next(lines, None)
            window = self.session.window
            if self._step(line):
                return
            if self.session.window != window and not self.session.over:
                if self._on_window is not None:
                    self._on_window(self.session)
                yield self.session.window
            elif self.session.waiting and not self._called_while_waiting(following):
                yield self.session.window  # a merchant of a market waits for the others
            line = following
        if self._on_window is not None:
            self._on_window(self.session)
        if self.source.finished and not self.session.over:
            raise ReplayError(
                f"{self.source.run_dir / TRACE_FILE} ends in window {self.session.window} with "
                f"call {self.session.memory.seq}, before the run did: the record is truncated"
            )
        if self._transcript is not None and self.source.finished:
            # (A record still under way may hold lines past its trace: a resume cuts them.)
            extra = self._next_transcript()
            if extra is not None:
                self.divergence = Divergence(
                    TRANSCRIPT_FILE, "(line)", _parsed(extra), None,
                    line=self._transcript.number,
                )  # fmt: skip

    def _called_while_waiting(self, line: TraceLine | None) -> bool:
        """The next line is a call the merchant made while it waited for the others (answered
        `window_closed`, in the window it closed): it is replayed before the hours run."""
        return line is not None and line.entry.window == self.session.window

    def run(self) -> None:
        """Replay the whole trace (or up to the first divergence)."""
        for _ in self.windows():
            pass

    # --- one call -------------------------------------------------------------------------------
    def _step(self, line: TraceLine) -> bool:
        """Replay one trace entry; True if it diverged."""
        entry = line.entry
        self.calls += 1
        if not self.check_reads and self._count_read(entry):
            return False
        try:
            self._replay(entry)
        except ReplayError:
            raise
        except Exception as exc:  # a tool's bug, met by arguments no run could have recorded
            reason = " ".join(str(exc).split())[:200]
            raise ReplayError(
                f"{self.source.run_dir / TRACE_FILE} line {line.number}: replaying call "
                f"{entry.seq} ({entry.tool}) raised {type(exc).__name__}: {reason}"
            ) from exc
        if len(self._emitted) != 1:  # a session records exactly one entry per call
            raise ReplayError(f"replaying call {entry.seq} recorded {len(self._emitted)} calls")
        produced = self._emitted.pop()
        if not self.check_reads:
            return self._check_entry(line, produced)
        text = json_line(produced)[:-1]
        self.trace_lines.append(text)
        if text != line.text:
            found = first_difference(entry.json_dict(), produced)
            if found is not None:
                path, expected, actual = found
                self.divergence = Divergence(
                    TRACE_FILE, path, expected, actual, window=entry.window,
                    seq=entry.seq, tool=entry.tool, line=line.number,
                )  # fmt: skip
                return True
        return self._check_transcript(entry)

    def _count_read(self, entry: TraceEntry) -> bool:
        """Without read checks: a read that the record says succeeded changed nothing but the
        window's call count and the trace's sequence number (reads take no idempotency key and
        change no state), so it is counted, not made. True if `entry` was such a read."""
        session = self.session
        tool = entry.tool
        if not entry.ok or entry.origin == "framework" or tool not in self._reads:
            return False
        if session.over or session.window != entry.window or session.engine.t != entry.t:
            return False  # not where the record says: made, so that the difference shows
        session.memory.window_calls += 1
        session.memory.seq += 1
        if session.memory.seq != entry.seq:
            raise ReplayError(
                f"{self.source.run_dir / TRACE_FILE}: call {entry.seq} is numbered "
                f"{session.memory.seq} by the replay"
            )
        return True

    @property
    def _reads(self) -> frozenset[str]:
        if self._read_tools is None:
            registry = self.session.registry
            self._read_tools = frozenset(
                t.name for t in registry.tools(include_optional=True)
                if t.kind == "read" and not t.ends_window
            )  # fmt: skip
        return self._read_tools

    def _check_entry(self, line: TraceLine, produced: dict[str, Any]) -> bool:
        """Without read checks: the call made must give the record's entry (compared as
        values, not as text); True if it differs."""
        if produced == line.entry.json_dict():
            return False
        found = first_difference(line.entry.json_dict(), produced)
        if found is None:
            return False
        path, expected, actual = found
        entry = line.entry
        self.divergence = Divergence(
            TRACE_FILE, path, expected, actual, window=entry.window,
            seq=entry.seq, tool=entry.tool, line=line.number,
        )  # fmt: skip
        return True

    def _replay(self, entry: TraceEntry) -> None:
        """Make the call the trace entry records, as the run's caller made it."""
        session = self.session
        if entry.origin == "framework":
            session.record_framework_call(entry.tool, entry.args, entry.ok, entry.error)
        else:
            session.env_origin = entry.origin
            if _refused_raw(entry):
                self._replay_raw(entry)
            else:
                session.call(
                    entry.tool,
                    entry.args,
                    entry.idempotency_key,
                    forced=entry.forced,
                )

    def _replay_raw(self, entry: TraceEntry) -> None:
        """A refused call whose arguments the trace keeps as `{"_raw": text}`: either input
        refused before any tool saw it (hostile: the trace keeps only a shortened text, so
        it is recorded again with the record's answer), or a call that really sent `_raw`
        (refused by the tool, as the replay shows). Either way nothing but the window's call
        count changes, so the call is made as sent and undone if it is not what the record
        holds."""
        session, memory = self.session, self.session.memory
        counted, seq, lines = memory.window_calls, memory.seq, len(self._recorder.lines)
        session.call(entry.tool, entry.args, forced=entry.forced)
        produced = self._emitted[-1]
        recorded_answer = self._peek_answer()
        answer = _answer_of(self._recorder.lines[-1])
        if produced == entry.json_dict() and (recorded_answer is None or recorded_answer == answer):
            return
        memory.window_calls, memory.seq = counted, seq
        del self._emitted[-1], self._recorder.lines[lines:]
        self.hostile += 1
        refusal = recorded_answer
        if not (isinstance(refusal, dict) and refusal.get("ok") is False):
            refusal = failure(
                entry.error or Refusal.INVALID_ARGUMENT, "refused (input not recorded)"
            )
        session.refuse(entry.tool, entry.args[RAW], refusal, forced=entry.forced)

    # --- the transcript -------------------------------------------------------------------------
    def _check_transcript(self, entry: TraceEntry | None) -> bool:
        """Compare the lines the last call (or the opening) produced with the record's next
        lines; True if they differ."""
        produced, self._recorder.lines = self._recorder.lines, []
        if self._transcript is None:
            return False
        for text in produced:
            recorded = self._next_transcript()
            self.transcript_lines += 1
            if recorded == text:
                continue
            expected = None if recorded is None else parse_line(recorded)
            found = first_difference(expected, parse_line(text))
            if found is None:
                continue  # the same JSON, written otherwise
            path, want, got = found
            self.divergence = Divergence(
                TRANSCRIPT_FILE, path, want, got,
                window=None if entry is None else entry.window,
                seq=None if entry is None else entry.seq,
                tool=None if entry is None else entry.tool,
                line=self._transcript.number,
            )  # fmt: skip
            if entry is None or "observation" in path:
                window = (parse_line(text) or {}).get("window")
                self.divergence = _at_window(self.divergence, window)
            return True
        return False

    def _next_transcript(self) -> str | None:
        if self._peeked is not None:
            line, self._peeked = self._peeked, None
            return line
        assert self._transcript is not None
        return self._transcript.next_line()

    def _peek_answer(self) -> Any:
        """The answer the record's next transcript line holds (None without a transcript)."""
        if self._transcript is None:
            return None
        if self._peeked is None:
            self._peeked = self._transcript.next_line()
        if self._peeked is None:
            return None
        return _answer_of(self._peeked)


def _answer_of(text: str) -> Any:
    value = parse_line(text)
    return value.get("answer") if isinstance(value, dict) else None


def _parsed(text: str) -> Any:
    value = parse_line(text)
    return text if value is None else value


def _at_window(divergence: Divergence, window: Any) -> Divergence:
    """An observation's difference is at the window that opened, not at the call."""
    return replace(divergence, window=window if isinstance(window, int) else divergence.window)


def _refused_raw(entry: TraceEntry) -> bool:
    args = entry.args
    return not entry.ok and len(args) == 1 and isinstance(args.get(RAW), str)
