"""The transcript of a run: what the agent was shown and what its calls answered.

`transcript.jsonl` is written next to `trace.jsonl`, by the same writer, flushed at the same
points and cut back by the same sequence numbers on resume. Two kinds of line, strict JSON:

    {"seq":0,"window":0,"observation":"Day 1, 00:00 ..."}     a window opened (after call `seq`)
    {"seq":1,"window":0,"answer":{"ok":true,...}}             the answer to trace entry `seq`

Every trace entry has exactly one answer line, in order (`answer` is null for a framework
tool's call: its answer stays in the harness). A window's observation line follows the answer
of the call that opened it (`seq` 0 for the first window). It holds only what the surface
handed the agent: the observation text as the window opened and each tool's own answer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

from merchantbench.record.checkpoint import CheckpointError
from merchantbench.session import Session

# One encoder for every line (`json.dumps` with these options builds a new one per call).
_LINE_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def json_line(record: dict[str, Any]) -> str:
    """One line of the trace or the transcript: strict, compact JSON (as `json.dumps(record,
    separators=(",", ":"), allow_nan=False)` writes it)."""
    return _LINE_ENCODER.encode(record) + "\n"


def observation_line(session: Session) -> str | None:
    """The line of the open window's observation, as the surface hands it out now (None once
    the run is over: no window is open)."""
    if session.over:
        return None
    return json_line(
        {"seq": session.memory.seq, "window": session.window, "observation": session.observation()}
    )


def answer_line(seq: int, window: int, answer: dict[str, Any] | None) -> str:
    """The line of one call's answer; an answer that is not strict JSON (a tool's bug) is
    kept as a note rather than ending the run."""
    try:
        return json_line({"seq": seq, "window": window, "answer": answer})
    except (TypeError, ValueError) as exc:
        note = {"unrecorded": f"the answer is not strict JSON: {type(exc).__name__}"}
        return json_line({"seq": seq, "window": window, "answer": note})


class TranscriptFile:
    """The open transcript of a running run, the session's recorder (`SessionRecorder`):
    buffered, flushed and synced by the run's lifecycle with the trace."""

    def __init__(self, path: Path) -> None:
        self._file: TextIO = open(path, "a")  # noqa: SIM115 (see close)

    def answered(self, entry: dict[str, Any], answer: dict[str, Any] | None) -> None:
        self._file.write(answer_line(entry["seq"], entry["window"], answer))

    def window_opened(self, session: Session) -> None:
        """Transcribe the open window's observation, as the surface hands it out now."""
        line = observation_line(session)
        if line is not None:
            self._file.write(line)

    def flush(self) -> None:
        """Hand what is written to the operating system (not synced to disk)."""
        self._file.flush()

    def sync(self) -> None:
        """Flush, and make what is written durable (before a checkpoint that covers it)."""
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def _seq_and_window(line: bytes) -> tuple[int, int, bool]:
    """(seq, window, is an observation) of one line; ValueError if it is damaged."""
    try:
        record = json.loads(line)
        seq, window = record["seq"], record["window"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError("damaged") from exc
    if not isinstance(seq, int) or not isinstance(window, int):
        raise ValueError("damaged")
    if "observation" in record:
        return seq, window, True
    if "answer" not in record:
        raise ValueError("damaged")
    return seq, window, False


def answers_held(path: Path) -> int:
    """How many answers the transcript holds in order from the first (a torn or damaged line
    ends the count): where a resume that replays logged calls starts transcribing again."""
    answered = 0
    for line in path.read_bytes().split(b"\n")[:-1]:  # after the last newline: torn or empty
        try:
            seq, _, is_observation = _seq_and_window(line)
        except ValueError:
            break
        if is_observation:
            continue
        if seq != answered + 1:
            break
        answered = seq
    return answered


def cut_transcript(path: Path, keep_seq: int, *, trailing: bool = True) -> tuple[bytes, int | None]:
    """What a transcript keeps when it is cut back to a checkpoint at trace entry `keep_seq`:
    the answers 1 … `keep_seq` and the observations of the windows they opened. Lines after
    (a torn last one included) are dropped; the resumed run writes them again, identically.
    Nothing is written here: `write_cut` does, once every other record is cut too.

    `trailing=False` drops the observations after the last kept answer too: a merchant of a
    market (runs/arena.py), whose next window is opened by whichever merchant closes the
    window last. That call may lie beyond what the resume keeps (written and flushed, never
    acknowledged), so the observation it wrote may belong to a window the resumed market has
    not opened; the resume writes the open window's observation again (`noted` says which
    it lacks), the same bytes when that window is open.

    Returns:
        The bytes to keep, and the window of the last observation kept (None if none is).

    Raises:
        CheckpointError: a line the checkpoint covers is missing, out of order or damaged.
    """
    kept: list[bytes] = []
    answered, last_window = 0, None
    lines = path.read_bytes().split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # what follows the last newline: nothing, or a torn line
    for number, line in enumerate(lines, start=1):
        try:
            seq, window, is_observation = _seq_and_window(line)
        except ValueError:
            seq, window, is_observation = -1, -1, False
        if is_observation and seq == answered:
            kept.append(line)
            last_window = window
            continue
        if answered == keep_seq:
            break  # the rest is later than the checkpoint (or torn): made again on resume
        if seq != answered + 1 or is_observation:
            raise CheckpointError(
                f"{path.name} line {number} is damaged or out of order, within what the "
                f"checkpoint covers (entries 1-{keep_seq}); nothing was changed"
            )
        kept.append(line)
        answered = seq
    if answered < keep_seq:
        raise CheckpointError(
            f"{path.name} has {answered} answers; the checkpoint covers {keep_seq}"
        )
    if not trailing:  # every kept line after the last answer is an observation
        while kept and _seq_and_window(kept[-1])[2]:
            kept.pop()
        observed = [w for _, w, is_obs in map(_seq_and_window, kept) if is_obs]
        last_window = observed[-1] if observed else None
    return b"".join(line + b"\n" for line in kept), last_window
