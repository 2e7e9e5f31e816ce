"""Checkpoints: the session (engine + session memory) and the agent, saved every few windows so
that a killed run resumes where it stood and ends exactly as an uninterrupted one would."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

from merchantbench.runs.files import atomic_write_bytes

CHECKPOINT = Path("checkpoint") / "state.pkl"
FORMAT = 1


def save_checkpoint(run_dir: Path, session_blob: bytes, agent: Any) -> None:
    payload = {"format": FORMAT, "session": session_blob, "agent": agent}
    atomic_write_bytes(run_dir / CHECKPOINT, pickle.dumps(payload, pickle.HIGHEST_PROTOCOL))


def load_checkpoint(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / CHECKPOINT
    if not path.is_file():
        return None
    payload = pickle.loads(path.read_bytes())
    if payload.get("format") != FORMAT:
        raise ValueError(f"checkpoint format {payload.get('format')} is not {FORMAT}")
    return payload


def truncate_trace(trace_path: Path, keep_seq: int) -> None:
    """Drop trace entries emitted after the checkpoint (and a torn last line, if any)."""
    if not trace_path.exists():
        return
    kept = []
    for line in trace_path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            break
        if entry["seq"] > keep_seq:
            break
        kept.append(line)
    atomic_write_bytes(trace_path, "".join(f"{line}\n" for line in kept).encode())
