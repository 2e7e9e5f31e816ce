"""The model's words file (record/words.py): one gzip member per line, readable as plain gzip,
cut back to a checkpoint by sequence number, a torn or damaged tail never read as words."""

from __future__ import annotations

import gzip
import json

import pytest

from merchantbench.record.checkpoint import CheckpointError
from merchantbench.record.schema import MODEL_WORDS_FILE
from merchantbench.record.words import (
    append_words,
    cut_words,
    encode_line,
    read_words,
    words_of_message,
)


def _line(seq: int, text: str = "thinking") -> dict:
    return {"seq": seq, "window": seq // 3, "content": None, "reasoning": f"{text} {seq}",
            "tool_calls": [{"name": "end_of_step", "arguments": "{}"}]}  # fmt: skip


def test_lines_are_gzip_members_that_never_change(tmp_path):
    append_words(tmp_path, [_line(1), _line(2)])
    append_words(tmp_path, [_line(3)])
    path = tmp_path / MODEL_WORDS_FILE
    whole = b"".join(encode_line(_line(s)) for s in (1, 2, 3))
    assert path.read_bytes() == whole  # flush boundaries leave no trace in the bytes
    with gzip.open(path, "rt") as plain:  # any gzip reader reads it as one JSONL stream
        assert [json.loads(x)["seq"] for x in plain] == [1, 2, 3]
    assert [w["reasoning"] for w in read_words(path)] == ["thinking 1", "thinking 2", "thinking 3"]


def test_cut_keeps_what_the_checkpoint_covers_and_drops_a_torn_tail(tmp_path):
    append_words(tmp_path, [_line(s) for s in (1, 2, 3)])
    path = tmp_path / MODEL_WORDS_FILE
    first_two = encode_line(_line(1)) + encode_line(_line(2))
    assert cut_words(path, 2) == first_two
    with open(path, "ab") as sink:  # a kill in the middle of writing line 4
        sink.write(encode_line(_line(4))[:9])
    assert [w["seq"] for w in read_words(path)] == [1, 2, 3]
    assert cut_words(path, 3) == path.read_bytes()[: len(first_two) + len(encode_line(_line(3)))]
    with pytest.raises(CheckpointError, match="has 3 lines; the checkpoint covers 4"):
        cut_words(path, 4)


def test_damage_within_what_the_checkpoint_covers_is_refused(tmp_path):
    path = tmp_path / MODEL_WORDS_FILE
    path.write_bytes(encode_line(_line(1)) + encode_line(_line(3)))
    with pytest.raises(CheckpointError, match="line 2 is damaged or out of order"):
        cut_words(path, 2)
    data = bytearray(encode_line(_line(1)))
    data[12] ^= 0xFF  # a flipped byte in the compressed stream
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError):
        cut_words(path, 1)
    assert cut_words(tmp_path / "absent.gz", 0) is None
    with pytest.raises(CheckpointError, match="missing"):
        cut_words(tmp_path / "absent.gz", 1)


def test_words_of_a_provider_message():
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "I list two."}],
        "reasoning_content": "Both ship within a day.",
        "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "list_product", "arguments": "{\"items\": ["}}],
    }  # fmt: skip
    assert words_of_message(message) == {
        "content": "I list two.",
        "reasoning": "Both ship within a day.",
        "tool_calls": [{"name": "list_product", "arguments": '{"items": ['}],
    }
    assert words_of_message({"content": "hi", "reasoning": "r"})["reasoning"] == "r"
    hostile = {"content": 3, "tool_calls": [None, {"function": "x"}], "reasoning": ["no"]}
    assert words_of_message(hostile) == {
        "content": None, "reasoning": None,
        "tool_calls": [{"name": None, "arguments": None}] * 2,
    }  # fmt: skip
    assert words_of_message(None) == {"content": None, "reasoning": None, "tool_calls": []}
