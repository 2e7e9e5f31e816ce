"""What a table knows of a run record's checks (`RunCheck`), and the cache of checks kept
outside every record (docs/verify.md, "Tables").

A table (the CLI leaderboard, the sweep report, `compare`, the dashboard, the static site)
counts a run only when its `RunCheck` says `verified`: the record was replayed (store, answers,
tables, metrics) and its files agree with each other (`replay/consistency.py`). The check is
made by `merchantbench.replay.evidence.check_run`, which keeps its result in the **check
cache**: one JSON file per record state, named by `record_key(run_dir)`, the SHA-256 of the
name and SHA-256 of every file of the record and of the code that checked it. The cache lives
outside the records (`check_cache_dir()`: `$MERCHANTBENCH_CHECKS`, else the user's cache
folder), so a file put inside a record (a hand-written `verified.json`) is one more file of the
record, never a verdict: any change to any file gives another key, and the record is replayed
again.

What it does not cover: the cache is a file of the local user; whoever can write to it can
write a verdict (delete the folder to check every record again). A record's model, tokens and
cost are not replayed: the check says which key attested them, if any (`record/attest.py`).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from merchantbench.record.code_version import source_sha256
from merchantbench.record.files import atomic_write_json
from merchantbench.record.safe_read import file_sha256, record_files

VERIFIED, DIFFERS, CANNOT = "verified", "differs", "cannot verify"
LEGACY_FILES = frozenset({"verified.json"})  # an old verdict inside a record: never read


@dataclass(frozen=True)
class RunCheck:
    """The checks of one run record, as a table shows them.

    Attributes:
        status: `verified` (replayed and consistent), `differs` (the first difference is in
            `detail`) or `cannot verify` (unreadable, hostile, no transcript, a sealed run
            without its seed: `detail` says why).
        detail: One line for people.
        sealed: A sealed run whose seed opened its commitment (a public seed never does).
        attestation: `attested`, `untrusted`, `differs`, `unsigned` or `refused`
            (`record.attest.AttestationCheck.status`).
        key_id: The key that signed the record, if any.
        assurance: `self-attested` or `host-attested`, as the signer said.
    """

    status: str
    detail: str
    sealed: bool = False
    attestation: str = "unsigned"
    key_id: str | None = None
    assurance: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == VERIFIED

    @property
    def attested(self) -> bool:
        return self.attestation == "attested"

    def what(self) -> str:
        """What is replayed and what only attested, in a few words (a table's cell)."""
        if not self.ok:
            return f"{self.status}: {self.detail}"
        key = (self.key_id or "")[:12]
        if self.attested:
            said = f"model, tokens, cost {self.assurance} by key {key}"
        elif self.attestation == "untrusted":
            said = f"model, tokens, cost signed by untrusted key {key}"
        else:
            said = "model, tokens, cost not attested"
        return f"store and metrics replayed; {said}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> RunCheck | None:
        if not isinstance(data, dict):
            return None
        try:
            return cls(**{k: data[k] for k in cls.__dataclass_fields__})
        except (KeyError, TypeError):
            return None


def check_cache_dir() -> Path:
    """Where checks are cached (outside every record)."""
    configured = os.environ.get("MERCHANTBENCH_CHECKS")
    if configured:
        return Path(configured)
    import platformdirs

    return Path(platformdirs.user_cache_dir("merchantbench")) / "checks"


def record_key(run_dir: Path, extra: str = "") -> str:
    """The SHA-256 of every file of the record (names and digests) and of the code.

    Raises:
        OSError: a file is hostile (`record.safe_read.RecordFileError`) or unreadable.
    """
    digest = hashlib.sha256(f"{source_sha256()}\n{extra}\n".encode())
    for name in record_files(Path(run_dir)):
        digest.update(f"{name}\0{file_sha256(Path(run_dir), name)}\n".encode())
    return digest.hexdigest()


def cached_check(key: str) -> RunCheck | None:
    """The cached check of a record state, or None (never checked, or a damaged entry)."""
    path = check_cache_dir() / key[:2] / f"{key}.json"
    try:
        return RunCheck.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def cache_check(key: str, check: RunCheck) -> None:
    """Keep a check (a cache that cannot be written is no error: the next table replays)."""
    try:
        atomic_write_json(check_cache_dir() / key[:2] / f"{key}.json", check.to_dict())
    except OSError:
        return
