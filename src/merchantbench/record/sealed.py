"""A sealed run's secret: the seed and the salt of its commitment (docs/design.md §10,
docs/sealed.md).

The harness writes them once, when the run starts, to `<run dir>/sealed/seed` (a JSON object
``{"seed": "<decimal>", "salt": "<hex>"}``, mode 0600 in a directory of mode 0700) and reads them
back only to resume the run and to reveal it. Nothing else reads that file: no tool, observation
or brief mentions it, the code sandbox mounts nothing of the run directory, and the HTTP and MCP
servers serve no file of it. `run.json` holds only the commitment.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from merchantbench.record.manifest import ManifestError, RunManifest, SeedCommitment, read_manifest
from merchantbench.record.safe_read import read_record_bytes
from merchantbench.seeds import (
    SEALED_FLOOR,
    SEED_LIMIT,
    SeedError,
    check_seed,
    commitment,
    draw_sealed_seed,
    is_sealed_range,
    new_salt,
    verify_commitment,
)

SEALED_DIR = "sealed"
SEED_FILE = Path(SEALED_DIR) / "seed"
FINISHED = ("completed", "closed", "stopped")  # ends after which a seed may be revealed


class SealedError(ValueError):
    """A sealed seed that cannot be written, read, verified or revealed; one-line reason."""


@dataclass(frozen=True)
class SealedSeed:
    """A sealed seed and the salt of its commitment. Its repr never shows either."""

    seed: int
    salt: str

    def __repr__(self) -> str:
        return "SealedSeed(<sealed>)"

    @classmethod
    def draw(cls) -> SealedSeed:
        """A fresh 128-bit seed of the sealed range and a fresh salt, from the OS."""
        return cls(draw_sealed_seed(), new_salt())

    @property
    def commitment(self) -> SeedCommitment:
        """What `run.json` records of this seed."""
        return SeedCommitment(sha256=commitment(self.seed, self.salt))

    def write(self, run_dir: Path) -> None:
        """Store the secret in `run_dir` (a new file, readable by the owner only)."""
        directory = run_dir / SEALED_DIR
        directory.mkdir(mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)  # mkdir's mode is filtered by the umask
        payload = json.dumps({"seed": str(self.seed), "salt": self.salt}).encode()
        try:
            fd = os.open(run_dir / SEED_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise SealedError(f"{run_dir / SEED_FILE} exists already; not overwritten") from None
        with os.fdopen(fd, "wb") as out:
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())


class SealedEpisodes:
    """A secret key, and the sealed seed and salt of each episode number derived from it.

    Episode N's seed is `2^64 + BLAKE2b(key, person=<purpose>-seed, data=N) mod (2^128 − 2^64)`
    and its salt `BLAKE2b(key, person=<purpose>-salt, data=N)` (hex), so N says nothing about the
    market without the key. The Gymnasium env's sealed mode draws a key per env (purpose
    `gym-episode`); the RL test split's pool keeps one in the operator's key file (`rl-test`).
    Its repr never shows the key.
    """

    def __init__(self, key: bytes | None = None, purpose: str = "gym-episode") -> None:
        self._key = secrets.token_bytes(32) if key is None else key
        if not 16 <= len(self._key) <= 64:
            raise SealedError("a sealed key is 16 to 64 bytes")
        if len(f"{purpose}-seed") > 16 or not purpose.isascii():
            raise SealedError("a sealed purpose is at most 11 ASCII characters")
        self._purpose = purpose

    def __repr__(self) -> str:
        return "SealedEpisodes(<sealed>)"

    def _digest(self, suffix: str, episode: int) -> bytes:
        data = str(episode).encode("ascii")  # any size of episode number
        person = f"{self._purpose}-{suffix}".encode("ascii")
        return hashlib.blake2b(data, key=self._key, person=person, digest_size=32).digest()

    def episode(self, number: int) -> SealedSeed:
        """The sealed seed (uniform over [2^64, 2^128)) and commitment salt of episode `number`."""
        value = int.from_bytes(self._digest("seed", number), "big")
        seed = SEALED_FLOOR + value % (SEED_LIMIT - SEALED_FLOOR)
        return SealedSeed(seed, self._digest("salt", number).hex())


def _parse(path: Path) -> SealedSeed:
    try:
        data = json.loads(read_record_bytes(path.parent.parent, SEED_FILE.as_posix(), 4096))
        sealed = SealedSeed(check_seed(int(data["seed"])), str(data["salt"]))
    except OSError as exc:
        raise SealedError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except (ValueError, TypeError, KeyError, SeedError):
        raise SealedError(f"{path}: not a sealed seed file") from None
    if not is_sealed_range(sealed.seed):
        raise SealedError(f"{path}: not a sealed seed file")
    return sealed


def read_sealed(run_dir: Path, manifest: RunManifest | None = None) -> SealedSeed:
    """The sealed seed of a run directory, checked against the commitment in its `run.json`.

    Raises:
        SealedError: The run is not sealed, the file is missing or damaged, or it does not open
            the recorded commitment.
    """
    try:
        meta = manifest or read_manifest(run_dir)
    except ManifestError as exc:
        raise SealedError(str(exc)) from None
    if meta.seed_commitment is None:
        raise SealedError(f"{run_dir} is not a sealed run (run.json records its seed)")
    sealed = _parse(run_dir / SEED_FILE)
    if not verify_commitment(sealed.seed, sealed.salt, meta.seed_commitment.sha256):
        raise SealedError(f"{run_dir / SEED_FILE} does not match the commitment in run.json")
    return sealed


def reveal(run_dir: Path, force: bool = False) -> tuple[SealedSeed, RunManifest]:
    """The seed of a finished sealed run, verified against its commitment.

    Args:
        run_dir: The run directory.
        force: Reveal even though the run has not finished (it is then no longer sealed).

    Raises:
        SealedError: The run is unfinished (and not `force`), not sealed, or does not verify.
    """
    try:
        meta = read_manifest(run_dir)
    except ManifestError as exc:
        raise SealedError(str(exc)) from None
    if meta.seed_commitment is not None and meta.ended not in FINISHED and not force:
        state = meta.ended or "running"
        raise SealedError(
            f"{run_dir} has not finished ({state}); revealing its seed now would unseal it "
            "(--force reveals anyway)"
        )
    return read_sealed(run_dir, meta), meta
