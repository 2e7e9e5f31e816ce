"""The model's words: what an LLM agent's model said at each call, kept compressed in the record.

`model_words.jsonl.gz` holds one line per line of `model_calls.jsonl` (same `seq` and `window`),
each line its own gzip member, so the file is plain gzip (`zcat run/model_words.jsonl.gz`,
`gzip.open` in Python) and yet a line once written never changes: appending more calls, or
cutting the file back to a checkpoint on resume, leaves the bytes of the lines before alone,
and a killed and resumed run writes the same bytes as an uninterrupted one.

A line: `{"seq", "window", "content", "reasoning", "tool_calls": [{"name", "arguments"}]}`:
the assistant message's text (None when it said nothing), the reasoning text where the
provider returns it (`reasoning_content` or `reasoning`; None otherwise), and its tool calls
with their arguments as the model wrote them (a string, perhaps not even JSON). A call that
failed has `"error"` instead.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from merchantbench.record.checkpoint import CheckpointError
from merchantbench.record.schema import MODEL_WORDS_FILE

WORDS_KEY = "words"  # the key a drained model-call record carries the words under
_LEVEL = 9
_REASONING_FIELDS = ("reasoning_content", "reasoning")


def words_of_message(message: Mapping[str, Any] | None) -> dict[str, Any]:
    """The words of an OpenAI-style assistant message (a dict as the API returns it)."""
    message = message if isinstance(message, Mapping) else {}
    content = message.get("content")
    if isinstance(content, list):  # content parts: keep their text
        content = "".join(str(p.get("text") or "") for p in content if isinstance(p, dict)) or None
    reasoning = next(
        (message[k] for k in _REASONING_FIELDS if isinstance(message.get(k), str) and message[k]),
        None,
    )
    calls = []
    listed = message.get("tool_calls")
    for call in listed if isinstance(listed, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        function = function if isinstance(function, dict) else {}
        calls.append({"name": function.get("name"), "arguments": function.get("arguments")})
    return {
        "content": content if isinstance(content, str) else None,
        "reasoning": reasoning,
        "tool_calls": calls,
    }


def encode_line(line: Mapping[str, Any]) -> bytes:
    """One line as its own gzip member (no timestamp: the same words give the same bytes)."""
    text = json.dumps(line, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n"
    return gzip.compress(text.encode("utf-8", "replace"), compresslevel=_LEVEL, mtime=0)


def append_words(run_dir: Path, lines: Sequence[Mapping[str, Any]]) -> None:
    """Append lines to the run's words file, synced."""
    if not lines:
        return
    with open(run_dir / MODEL_WORDS_FILE, "ab") as sink:
        sink.write(b"".join(encode_line(line) for line in lines))
        sink.flush()
        os.fsync(sink.fileno())


def members(data: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(start, end, text) of each whole gzip member of `data`; stops at a torn or damaged one."""
    start = 0
    while start < len(data):
        unpack = zlib.decompressobj(wbits=31)
        try:
            text = unpack.decompress(data[start:])
        except zlib.error:
            return
        if not unpack.eof:
            return  # torn: the writer was killed mid-line
        end = len(data) - len(unpack.unused_data)
        yield start, end, text
        start = end


def read_words(path: Path) -> Iterator[dict[str, Any]]:
    """The lines of a words file that can be read (a damaged tail is left out)."""
    try:
        data = path.read_bytes()
    except OSError:
        return
    for _, _, text in members(data):
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if isinstance(line, dict):
            yield line


def cut_words(path: Path, keep_seq: int) -> bytes | None:
    """What the words file keeps when cut back to a checkpoint covering `keep_seq` model calls
    (None: there is no file). Nothing is written here (`record.files.write_cut` does).

    Raises:
        CheckpointError: a line the checkpoint covers is missing, damaged or out of order.
    """
    if not path.exists():
        if keep_seq:
            raise CheckpointError(f"{path.name} is missing; the checkpoint covers {keep_seq}")
        return None
    data = path.read_bytes()
    kept_end, kept = 0, 0
    for _, end, text in members(data):
        if kept == keep_seq:
            break
        try:
            seq = json.loads(text)["seq"]
        except (ValueError, KeyError, TypeError):
            seq = None
        if seq != kept + 1:
            raise CheckpointError(
                f"{path.name} line {kept + 1} is damaged or out of order, within what the "
                f"checkpoint covers (lines 1-{keep_seq}); nothing was changed"
            )
        kept, kept_end = kept + 1, end
    if kept < keep_seq:
        raise CheckpointError(f"{path.name} has {kept} lines; the checkpoint covers {keep_seq}")
    return data[:kept_end]
