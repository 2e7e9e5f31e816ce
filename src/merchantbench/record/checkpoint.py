"""Checkpoints: the session (engine + session memory) and the agent (or, for a run played from
outside, its driver's protocol state as JSON text), saved from time to time
(runs/lifecycle.py) so that a killed run resumes where it stood and ends exactly as an
uninterrupted one would.

A checkpoint is a pickle, and unpickling runs whatever code it names, so a resume loads only a
checkpoint this machine's user wrote: its header holds an HMAC-SHA256 of the content keyed by a
per-user secret (`checkpoint_key`: 32 random bytes in `checkpoint.key` of the user's config
directory, created with mode 0600 on first use; `MERCHANTBENCH_CHECKPOINT_KEY` names another
key file, e.g. for CI or one's own other machine). A checkpoint from elsewhere, or an older
one with only a plain hash, is refused before anything is unpickled. What this does not cover:
anyone who can read the key file (this user, root) can forge a checkpoint this machine accepts.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import pickle
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import platformdirs

from merchantbench.record.files import atomic_write_bytes

CHECKPOINT = Path("checkpoint") / "state.pkl"
FORMAT = 4  # 2: a header line with the payload's SHA-256; 3: and a line pinning the run;
# 4: and the HMAC-SHA256 of the content under this user's checkpoint key
_MAGIC = b"merchantbench-checkpoint"
KEY_ENV = "MERCHANTBENCH_CHECKPOINT_KEY"  # the key file to use instead of the user's own
KEY_FILE = "checkpoint.key"
_KEY_BYTES = 32


class CheckpointError(ValueError):
    """A checkpoint that cannot be trusted (damaged, truncated, another format, written
    elsewhere)."""


def key_path() -> Path:
    """The checkpoint key file: `$MERCHANTBENCH_CHECKPOINT_KEY`, or `checkpoint.key` in the
    user's config directory."""
    configured = os.environ.get(KEY_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_config_dir("merchantbench")) / KEY_FILE


def checkpoint_key() -> bytes:
    """This user's checkpoint key, made (mode 0600, in a 0700 directory) the first time.

    Raises:
        CheckpointError: The key file cannot be made or read, or holds no key.
    """
    path = key_path()
    try:
        if not path.exists():
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass  # another process made it first: read theirs
            else:
                with os.fdopen(fd, "w") as out:
                    out.write(secrets.token_hex(_KEY_BYTES) + "\n")
                    out.flush()
                    os.fsync(out.fileno())
        text = path.read_text().strip()
    except OSError as exc:
        raise CheckpointError(
            f"cannot use the checkpoint key {path} ({exc.strerror or exc}); set {KEY_ENV} to a "
            "key file this user can write"
        ) from None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 16:
        raise CheckpointError(f"the checkpoint key {path} holds no key (64 hex digits expected)")
    return key


def _mac(body: bytes) -> bytes:
    return hmac.new(checkpoint_key(), body, hashlib.sha256).hexdigest().encode()


def save_checkpoint(
    run_dir: Path,
    session_blob: bytes,
    agent: Any,
    pins: Mapping[str, Any] | None = None,
    driver_state: str | None = None,
) -> None:
    """Write the checkpoint: a header line (magic, format, SHA-256 of the rest, its HMAC under
    this user's checkpoint key), one JSON line with the run's pins (record/pins.py), then the
    pickled session, agent (None for a run played from outside) and the driver's state (JSON
    text, or None).

    The pins sit outside the pickle so that `read_checkpoint_pins` can compare them before
    anything is unpickled (code that changed may no longer unpickle an old agent).
    """
    payload = _stable_pickle(
        {"format": FORMAT, "session": session_blob, "agent": agent, "driver": driver_state}
    )
    body = json.dumps(pins, sort_keys=True, separators=(",", ":")).encode() + b"\n" + payload
    digest = hashlib.sha256(body).hexdigest().encode()
    header = b"%s %d %s %s\n" % (_MAGIC, FORMAT, digest, _mac(body))
    atomic_write_bytes(run_dir / CHECKPOINT, header + body)


class _StablePickler(pickle.Pickler):
    """A pickler whose bytes do not depend on the process. A set (or frozenset) of strings
    iterates in an order that follows the per-process string hash, so it is written as a
    persistent id holding its items sorted; a second reference to the same set names the
    first, so shared sets stay shared (`_StableUnpickler` reads both). Sets of other elements
    are pickled as usual: their order depends on the process only if their elements' hashes
    do (tests/runs/test_checkpoint_bytes.py)."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        self._sets: dict[int, tuple[int, object]] = {}  # id → (index, the set, kept alive)

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) not in (set, frozenset):
            return None
        seen = self._sets.get(id(obj))
        if seen is not None:
            return ("set", seen[0])
        if not all(type(item) is str for item in obj):
            return None
        self._sets[id(obj)] = (len(self._sets), obj)
        return ("set", len(self._sets) - 1, type(obj) is frozenset, sorted(obj))


class _StableUnpickler(pickle.Unpickler):
    def __init__(self, payload: bytes) -> None:
        super().__init__(io.BytesIO(payload))
        self._sets: list[set[str] | frozenset[str]] = []

    def persistent_load(self, pid: Any) -> Any:
        if type(pid) is tuple and len(pid) == 2 and pid[0] == "set":
            return self._sets[pid[1]]
        if type(pid) is tuple and len(pid) == 4 and pid[0] == "set":
            made = (frozenset if pid[2] else set)(pid[3])
            self._sets.append(made)
            return made
        raise pickle.UnpicklingError(f"unknown persistent id {pid!r:.80}")


def _stable_pickle(value: Any) -> bytes:
    buffer = io.BytesIO()
    _StablePickler(buffer).dump(value)
    return buffer.getvalue()


def _verified_body(path: Path) -> tuple[Any, bytes]:
    """The pins and the pickled payload of a checkpoint file whose hash matches and whose MAC
    says this user wrote it."""
    header, _, body = path.read_bytes().partition(b"\n")
    parts = header.split(b" ")
    if len(parts) < 3 or parts[0] != _MAGIC:
        raise CheckpointError(f"{path} is not a checkpoint of format {FORMAT}")
    if parts[1] != str(FORMAT).encode() or len(parts) != 4:
        raise CheckpointError(
            f"{path} is a checkpoint of format {parts[1].decode(errors='replace')}, without the "
            f"key of the machine that wrote it; this code resumes format {FORMAT} only"
        )
    if hashlib.sha256(body).hexdigest().encode() != parts[2]:
        raise CheckpointError(f"{path} is damaged: its content does not match its hash")
    if not hmac.compare_digest(_mac(body), parts[3]):
        raise CheckpointError(
            f"{path} was not written by this user on this machine (its MAC does not match the "
            f"key {key_path()}); a checkpoint is a pickle that would run its writer's code, so "
            f"a record from elsewhere is never resumed (see docs/run-record.md, Resume)"
        )
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
        loaded: dict[str, Any] = _StableUnpickler(payload).load()
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
