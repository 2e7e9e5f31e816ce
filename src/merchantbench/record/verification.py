"""Whether a run record was verified: the result file a replay leaves in the run directory.

`merchantbench verify` (or anything that replays a record and compares it) writes
`<run_dir>/verified.json` with `write_verification`:

    {"ok": true, "state_hash": "<run.json's state_hash when it was checked>",
     "checked_at": "2026-12-02T00:10:00+00:00", "package_version": "0.1.0",
     "source_sha256": "<hash of the code that replayed it>", "detail": "…"}

`is_verified(run_dir)` is the one reader every table uses (CLI leaderboard, sweep report,
dashboard, static site): a run counts as verified only when that file says `ok` *and* names the
state hash `run.json` holds now, so a record edited or replaced after its check is "not verified"
again. A missing or damaged file means "not verified", never an error.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import merchantbench
from merchantbench.record.code_version import source_sha256
from merchantbench.record.files import atomic_write_json
from merchantbench.record.schema import RUN_FILE

VERIFICATION_FILE = "verified.json"


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def is_verified(run_dir: Path) -> bool:
    """The run's record was replayed to the same result and has not changed since."""
    result = _json(Path(run_dir) / VERIFICATION_FILE)
    state_hash = _json(Path(run_dir) / RUN_FILE).get("state_hash")
    return result.get("ok") is True and bool(state_hash) and result.get("state_hash") == state_hash


def write_verification(run_dir: Path, ok: bool, detail: str = "") -> Path:
    """Record the result of checking `run_dir` now (against its current `run.json`)."""
    path = Path(run_dir) / VERIFICATION_FILE
    atomic_write_json(path, {
        "ok": ok,
        "state_hash": _json(Path(run_dir) / RUN_FILE).get("state_hash"),
        "checked_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "package_version": merchantbench.__version__,
        "source_sha256": source_sha256(),
        "detail": detail,
    })  # fmt: skip
    return path
