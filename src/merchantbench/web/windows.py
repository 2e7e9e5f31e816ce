"""One window of a run record, read for the trace viewer: what the agent saw (the observation),
what it called (the trace), what came back (the transcript's answers), and an LLM agent's
model calls. Read from the files on disk only; a record without a transcript shows its trace.

The JSONL files of a record are indexed by window once (byte offsets, rebuilt when a file
grows), so paging through a year-long record reads one window's lines, not the whole file.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path
from typing import Any

from merchantbench.record.files import json_value
from merchantbench.record.schema import (
    MODEL_CALLS_FILE,
    MODEL_WORDS_FILE,
    TRACE_FILE,
    TRANSCRIPT_FILE,
)
from merchantbench.record.words import read_words

MAX_CALLS = 500  # a window's calls the viewer shows (the cap per window is far lower)
_HEAD = re.compile(rb'^\{"seq":-?\d+,"window":(-?\d+)')  # how the writers start every line
_CACHED = 16  # files whose window index is kept
# A line this short cannot nest deeper than half its length, far below the parser's limit; a
# longer one is parsed whole, so a value nested too deeply counts as damaged.
_SHORT_LINE = 1024


def _window_of(line: bytes) -> int | None:
    """The window a JSONL line belongs to (None for a damaged line)."""
    head = _HEAD.match(line)
    if head is not None and len(line) <= _SHORT_LINE:
        return int(head.group(1))
    try:
        window = json_value(line).get("window")
    except (ValueError, AttributeError):  # not JSON, nested too deeply, not an object
        return None
    return window if isinstance(window, int) else None


class WindowIndex:
    """Where each window's lines lie in one JSONL file: window -> (first byte, end byte)."""

    def __init__(self, path: Path) -> None:
        self.spans: dict[int, tuple[int, int]] = {}
        self.damaged: list[int] = []  # numbers (from 1) of whole lines whose window is unread
        offset = 0
        with open(path, "rb") as lines:
            for number, line in enumerate(lines, start=1):
                window = _window_of(line) if line.endswith(b"\n") else None  # torn: unread
                if window is not None:
                    start, _ = self.spans.get(window, (offset, offset))
                    self.spans[window] = (start, offset + len(line))
                elif line.endswith(b"\n"):
                    self.damaged.append(number)
                offset += len(line)

    def records(self, path: Path, window: int, limit: int) -> list[dict[str, Any]]:
        """The parsed lines of `window` (damaged ones skipped), at most `limit`."""
        if window not in self.spans:
            return []
        start, end = self.spans[window]
        with open(path, "rb") as source:
            source.seek(start)
            chunk = source.read(end - start)
        found = []
        for line in chunk.splitlines():
            try:
                record = json_value(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("window") == window:
                found.append(record)
                if len(found) >= limit:
                    break
        return found


_indexes: OrderedDict[tuple[str, int, int], WindowIndex] = OrderedDict()


def index_of(path: Path) -> WindowIndex | None:
    """The window index of `path` (cached by size and modification time), None if absent."""
    try:
        stat = path.stat()
    except OSError:
        return None
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _indexes:
        _indexes[key] = WindowIndex(path)
        while len(_indexes) > _CACHED:
            _indexes.popitem(last=False)
    _indexes.move_to_end(key)
    return _indexes[key]


class WordsIndex:
    """The model's words of one record (record/words.py) by window: the file is compressed
    line by line, so it is read whole once (cached like the window indexes)."""

    def __init__(self, path: Path) -> None:
        self.by_window: dict[int, list[dict[str, Any]]] = {}
        for line in read_words(path):
            window = line.get("window")
            if isinstance(window, int):
                self.by_window.setdefault(window, []).append(line)


_words: OrderedDict[tuple[str, int, int], WordsIndex] = OrderedDict()


def model_words(run_dir: Path, window: int, limit: int = MAX_CALLS) -> list[dict[str, Any]]:
    """What the model said at each call of `window`, in order (empty without a words file)."""
    path = run_dir / MODEL_WORDS_FILE
    try:
        stat = path.stat()
    except OSError:
        return []
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _words:
        _words[key] = WordsIndex(path)
        while len(_words) > _CACHED:
            _words.popitem(last=False)
    _words.move_to_end(key)
    return _words[key].by_window.get(window, [])[:limit]


def _records(run_dir: Path, name: str, window: int, limit: int) -> list[dict[str, Any]]:
    index = index_of(run_dir / name)
    return [] if index is None else index.records(run_dir / name, window, limit)


def damaged_trace(run_dir: Path) -> str | None:
    """What is wrong with a trace whose whole lines are not all readable entries (None when
    they are): its first damaged line, for the dashboard's run page and the site."""
    index = index_of(run_dir / TRACE_FILE)
    if index is None or not index.damaged:
        return None
    more = len(index.damaged) - 1
    return (f"{TRACE_FILE} line {index.damaged[0]} cannot be read (not JSON, or nested too "
            f"deeply)" + (f", and {more} more" if more else ""))  # fmt: skip


def windows_recorded(run_dir: Path) -> int:
    """How many windows the trace has entries for (the viewer's last page)."""
    index = index_of(run_dir / TRACE_FILE)
    return max(index.spans, default=-1) + 1 if index is not None else 0


def window_view(run_dir: Path, window: int) -> dict[str, Any]:
    """Everything the viewer shows of one window.

    Returns:
        `window`, `windows` (windows recorded), `transcript` (whether the record has one),
        `observation` (the text the agent was given as the window opened, or None), `calls`
        (trace entries in order, each with its `answer` when the transcript has it) and
        `model_calls` (an LLM agent's, from `model_calls.jsonl`) and `model_words` (what its
        model said at each of those calls, from `model_words.jsonl.gz`).
    """
    has_transcript = (run_dir / TRANSCRIPT_FILE).is_file()
    calls = _records(run_dir, TRACE_FILE, window, MAX_CALLS)
    lines = _records(run_dir, TRANSCRIPT_FILE, window, 2 * MAX_CALLS + 1) if has_transcript else []
    answers = {line["seq"]: line["answer"] for line in lines if "answer" in line}
    observation = next((line["observation"] for line in lines if "observation" in line), None)
    for call in calls:
        call["answered"] = call.get("seq") in answers
        call["answer"] = answers.get(call.get("seq"))
    return {
        "window": window,
        "windows": windows_recorded(run_dir),
        "transcript": has_transcript,
        "observation": observation,
        "calls": calls,
        "model_calls": _records(run_dir, MODEL_CALLS_FILE, window, MAX_CALLS),
        "model_words": model_words(run_dir, window),
    }
