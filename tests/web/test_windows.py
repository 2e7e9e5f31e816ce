"""Reading one window of a record for the viewer, without a browser: the trace's calls joined to
the transcript's answers by seq, the observation, model calls; a growing file is re-indexed, a
torn last line is not read, and a record without a transcript says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from merchantbench.web.windows import window_view


def write(path: Path, records: list[dict[str, Any]], tail: str = "") -> None:
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records) + tail)


def entry(seq: int, window: int, tool: str, ok: bool = True) -> dict[str, Any]:
    error = None if ok else "limit"
    return {"seq": seq, "window": window, "t": 12 * window, "tool": tool, "args": {}, "ok": ok,
            "error": error, "origin": "env", "forced": False}  # fmt: skip


def record(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    write(run / "trace.jsonl", [entry(1, 0, "query_balance"), entry(2, 0, "end_of_step"),
                                entry(3, 1, "search_products", ok=False)])  # fmt: skip
    write(run / "transcript.jsonl", [
        {"seq": 0, "window": 0, "observation": "first"},
        {"seq": 1, "window": 0, "answer": {"ok": True, "balance": 1.5}},
        {"seq": 2, "window": 0, "answer": {"ok": True}},
        {"seq": 2, "window": 1, "observation": "second"},
    ], tail='{"seq":3,"window":1,"answer":{"ok":fa')  # fmt: skip
    return run


def test_a_window_joins_calls_to_their_answers(tmp_path: Path) -> None:
    run = record(tmp_path)
    first = window_view(run, 0)
    assert first["windows"] == 2 and first["transcript"] and first["observation"] == "first"
    assert [c["answer"] for c in first["calls"]] == [{"ok": True, "balance": 1.5}, {"ok": True}]
    second = window_view(run, 1)
    assert second["observation"] == "second"
    [call] = second["calls"]
    assert call["tool"] == "search_products" and not call["answered"]  # torn: not read
    beyond = window_view(run, 5)
    assert beyond["calls"] == [] and beyond["observation"] is None and beyond["windows"] == 2


def test_a_growing_record_is_read_again(tmp_path: Path) -> None:
    run = record(tmp_path)
    assert not window_view(run, 1)["calls"][0]["answered"]
    with open(run / "transcript.jsonl", "a") as f:
        f.write("lse}}\n")  # the torn line completed
    with open(run / "model_calls.jsonl", "w") as f:
        f.write(json.dumps({"seq": 1, "window": 1, "model": "m", "input_tokens": 9}) + "\n")
    later = window_view(run, 1)
    assert later["calls"][0]["answer"] == {"ok": False}
    assert [c["input_tokens"] for c in later["model_calls"]] == [9]


def test_a_record_without_a_transcript_has_calls_only(tmp_path: Path) -> None:
    run = record(tmp_path)
    (run / "transcript.jsonl").unlink()
    view = window_view(run, 0)
    assert not view["transcript"] and view["observation"] is None
    assert [c["tool"] for c in view["calls"]] == ["query_balance", "end_of_step"]
    assert not any(c["answered"] for c in view["calls"])
