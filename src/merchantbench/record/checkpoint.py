"""Checkpoints: the session (engine + session memory) and the agent (or, for a run played from
outside, its driver's protocol state as JSON text), saved from time to time
(runs/lifecycle.py) so that a killed run resumes where it stood and ends exactly as an
uninterrupted one would."""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from merchantbench.record.files import atomic_write_bytes

CHECKPOINT = Path("checkpoint") / "state.pkl"
FORMAT = 3  # 2: a header line with the payload's SHA-256; 3: and a line pinning the run
_MAGIC = b"merchantbench-checkpoint"


class CheckpointError(ValueError):
    """A checkpoint that cannot be trusted (damaged, truncated, another format)."""


def save_checkpoint(
    run_dir: Path,
    session_blob: bytes,
    agent: Any,
    pins: Mapping[str, Any] | None = None,
    driver_state: str | None = None,
) -> None:
    """Write the checkpoint: a header line (magic, format, SHA-256 of the rest), one JSON line
    with the run's pins (record/pins.py), then the pickled session, agent (None for a run
    played from outside) and the driver's state (JSON text, or None).

    The pins sit outside the pickle so that `read_checkpoint_pins` can compare them before
    anything is unpickled (code that changed may no longer unpickle an old agent).
    """
    payload = pickle.dumps(
        {"format": FORMAT, "session": session_blob, "agent": agent, "driver": driver_state},
        pickle.HIGHEST_PROTOCOL,
    )
    body = json.dumps(pins, sort_keys=True, separators=(",", ":")).encode() + b"\n" + payload
    header = b"%s %d %s\n" % (_MAGIC, FORMAT, hashlib.sha256(body).hexdigest().encode())
    atomic_write_bytes(run_dir / CHECKPOINT, header + body)


def _verified_body(path: Path) -> tuple[Any, bytes]:
    """The pins and the pickled payload of a checkpoint file whose hash matches."""
    header, _, body = path.read_bytes().partition(b"\n")
    parts = header.split(b" ")
    if len(parts) != 3 or parts[0] != _MAGIC or parts[1] != str(FORMAT).encode():
        raise CheckpointError(f"{path} is not a checkpoint of format {FORMAT}")
    if hashlib.sha256(body).hexdigest().encode() != parts[2]:
        raise CheckpointError(f"{path} is damaged: its content does not match its hash")
    pins_line, _, payload = body.partition(b"\n")
    return json.loads(pins_line), payload


def read_checkpoint_pins(run_dir: Path) -> tuple[bool, Any]:
    """Whether the run directory has a checkpoint, and the pins it was saved with (None if it
    was saved without), read without unpickling anything.

    Raises:
        CheckpointError: as `load_checkpoint`.
    """
    path = run_dir / CHECKPOINT
    if not path.is_file():
        return False, None
    return True, _verified_body(path)[0]


def load_checkpoint(run_dir: Path) -> dict[str, Any] | None:
    """The checkpoint of a run directory (`session`, `agent`, `driver`, `pins`), None if it has
    none.

    Raises:
        CheckpointError: the file's content does not match its hash, or is of another format.
            Nothing is unpickled from a file that fails the check.
    """
    path = run_dir / CHECKPOINT
    if not path.is_file():
        return None
    pins, payload = _verified_body(path)
    try:
        loaded: dict[str, Any] = pickle.loads(payload)
    except Exception as exc:  # intact but written by other code (--allow-code-change)
        raise CheckpointError(
            f"{path} cannot be loaded by this code ({type(exc).__name__}: {exc})"
        ) from None
    loaded["pins"] = pins
    return loaded


def cut_trace(trace_path: Path, keep_seq: int) -> bytes | None:
    """What a record of `seq`-numbered lines keeps when cut back to what the checkpoint covers:
    entries with seq 1 … `keep_seq` (None: there is no file, and nothing to keep). Nothing is
    written here (`record.files.write_cut` does, once every record is checked).

    Entries after the checkpoint (and a torn last line) are dropped: the resumed run makes them
    again, identically. Cutting goes by sequence number, never by "first unparseable line".

    Raises:
        CheckpointError: an entry the checkpoint covers is missing, out of order or damaged.
    """
    if not trace_path.exists():
        if keep_seq:
            raise CheckpointError(f"{trace_path.name} is missing; the checkpoint covers {keep_seq}")
        return None
    kept: list[bytes] = []
    for number, line in enumerate(trace_path.read_bytes().split(b"\n"), start=1):
        if len(kept) == keep_seq:
            break
        try:
            seq = json.loads(line)["seq"]
        except (ValueError, KeyError, TypeError):
            seq = None
        if seq != len(kept) + 1:
            raise CheckpointError(
                f"{trace_path.name} line {number} is damaged or out of order, within what the "
                f"checkpoint covers (entries 1-{keep_seq}); nothing was changed"
            )
        kept.append(line)
    if len(kept) < keep_seq:
        raise CheckpointError(
            f"{trace_path.name} has {len(kept)} entries; the checkpoint covers {keep_seq}"
        )
    return b"".join(line + b"\n" for line in kept)
