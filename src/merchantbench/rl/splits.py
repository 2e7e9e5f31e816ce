"""Seed splits for training: train, validation and test, disjoint by construction.

- **train**: episode i (i ≥ 0) plays public seed `2^40 + i`, i < 2^40.
- **validation**: episode i plays public seed `2^41 + i`, i < 2^40.
- **test**: the sealed pool. Episode i plays the sealed-range seed derived from the operator's
  256-bit key by keyed BLAKE2b (`record.sealed.SealedEpisodes`, purpose `rl-test`), in
  [2^64, 2^128). Without the key nobody (trainer, agent, anyone reading the code) can name a
  test market; scores on it are reported as sealed. After the evaluation the operator reveals
  each episode's seed and salt (`SealedPool.reveal`), checked against the commitment published
  before it (`SealedPool.commitment`, and each episode's `seeds.commitment`).

The three ranges do not meet: train and validation are halves of [2^40, 2^42), far from the
small public seeds (1, 2, 3, …) of the paper, the docs and calibration, and test seeds are all
≥ 2^64 (the sealed range, where markets are built from keyed digests: docs/sealed.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from enum import StrEnum
from pathlib import Path

from merchantbench.record.sealed import SealedEpisodes, SealedSeed
from merchantbench.seeds import is_sealed_range

__all__ = [
    "SPLIT_SIZE",
    "SealedPool",
    "Split",
    "SplitError",
    "episode_seed",
    "split_of",
]

SPLIT_SIZE = 1 << 40  # episodes of a public split
_BASES = {"train": 1 << 40, "validation": 1 << 41}
_POOL_PURPOSE = "rl-test"
_POOL_PREFIX = "merchantbench-pool-v1"


class SplitError(ValueError):
    """An unknown split, an episode index out of range, a test episode without the operator's
    pool, or a pool file that cannot be used; one-line reason."""


class Split(StrEnum):
    TRAIN = "train"
    VALIDATION = "validation"
    TEST = "test"


def _split(name: str | Split) -> Split:
    try:
        return Split(name)
    except ValueError:
        raise SplitError(f"unknown split {name!r}: train, validation or test") from None


def _index(index: int) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < SPLIT_SIZE:
        raise SplitError(f"an episode index is an integer in [0, 2^40), not {index!r}")
    return index


class SealedPool:
    """The test split's secret: the operator's 256-bit key, kept in a file of mode 0600.

    Episode i's seed and salt derive from the key (`SealedEpisodes`, purpose `rl-test`).
    `commitment` (SHA-256 of ``merchantbench-pool-v1:<key hex>``) is published before an
    evaluation; `reveal(i)` discloses one episode afterwards, `key_hex` the whole pool.
    Its repr never shows the key.
    """

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise SplitError("a sealed pool's key is 32 bytes")
        self._key = key
        self._episodes = SealedEpisodes(key, purpose=_POOL_PURPOSE)

    def __repr__(self) -> str:
        return "SealedPool(<sealed>)"

    @classmethod
    def create(cls, path: Path) -> SealedPool:
        """A fresh key from the OS, written to a new file `path` (mode 0600; never overwritten)."""
        key = secrets.token_bytes(32)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise SplitError(f"{path} exists already; not overwritten") from None
        except OSError as exc:
            raise SplitError(f"{path}: cannot be written ({exc.strerror or exc})") from None
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(json.dumps({"key": key.hex()}))
        return cls(key)

    @classmethod
    def load(cls, path: Path) -> SealedPool:
        """The pool of a key file written by `create` (or published after the evaluation)."""
        try:
            key = bytes.fromhex(json.loads(Path(path).read_text(encoding="ascii"))["key"])
        except OSError as exc:
            raise SplitError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        except (ValueError, TypeError, KeyError):
            raise SplitError(f"{path}: not a sealed pool file") from None
        return cls(key)

    @property
    def commitment(self) -> str:
        """SHA-256 hex of ``merchantbench-pool-v1:<key hex>``: publish it before evaluating."""
        return hashlib.sha256(f"{_POOL_PREFIX}:{self._key.hex()}".encode("ascii")).hexdigest()

    def key_hex(self) -> str:
        """The key (reveals every test episode: only after the evaluation)."""
        return self._key.hex()

    def reveal(self, index: int) -> SealedSeed:
        """Test episode `index`'s seed and commitment salt (host side)."""
        return self._episodes.episode(_index(index))


def episode_seed(split: str | Split, index: int, pool: SealedPool | None = None) -> int:
    """The seed of episode `index` of `split` (test: needs the operator's `pool`).

    Raises:
        SplitError: Unknown split, index out of [0, 2^40), or a test episode without a pool.
    """
    name, index = _split(split), _index(index)
    if name is Split.TEST:
        if pool is None:
            raise SplitError("the test split is sealed: its seeds need the operator's pool key")
        return pool.reveal(index).seed
    return _BASES[name.value] + index


def split_of(seed: int) -> Split | None:
    """The split a seed belongs to: train or validation by range, test for every sealed-range
    seed (a sealed pool's seeds are there), None for any other public seed."""
    if is_sealed_range(seed):
        return Split.TEST
    for name, base in _BASES.items():
        if base <= seed < base + SPLIT_SIZE:
            return Split(name)
    return None
