"""Market seeds: public seeds, sealed seeds and what may be derived from them (docs/design.md §10).

A seed is an integer in [`SEED_MIN`, `SEED_LIMIT`). Seeds below `SEALED_FLOOR` (2^64) are the
*public range*: 1, 2, 3, … for development and reproduction; their markets are built exactly as
before sealed runs existed. Seeds in [2^64, 2^128) are the *sealed range*: `draw_sealed_seed`
takes them from the operating system, and for them every stream the market and the run draw from
is keyed by a keyed hash (BLAKE2b, the seed as key, one personalisation per purpose) instead of by
the raw seed, and public ids are keyed hashes themselves. Seeing any number of ids, names or
prices then says nothing about the seed: recovering it means inverting BLAKE2b, i.e. brute force
over 2^128 seeds.

A sealed run's record carries a commitment, SHA-256 of
``"merchantbench-seed-v1:<salt hex>:<seed decimal>"``, so that anyone can check a revealed
(seed, salt) with `sha256sum` alone (docs/sealed.md).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
from typing import Final

SEALED_FLOOR = 1 << 64  # the first seed of the sealed range
SEED_LIMIT = 1 << 128  # seeds are below this
SEED_MIN = -(1 << 63)  # public seeds may be negative (as int64 seeds always could)
SALT_BYTES = 32
COMMITMENT_SCHEME: Final = "sha256(merchantbench-seed-v1:salt:seed)"
_COMMIT_PREFIX = "merchantbench-seed-v1"
# The conformance check's seed (`merchantbench check`): six digits, so that its `hidden` check
# can look for the seed's value in every output.
CHECK_SEED = 314159


class SeedError(ValueError):
    """A seed outside the accepted range, or a reveal that does not match its commitment."""


def check_seed(seed: int) -> int:
    """The seed itself, if it is an integer in [`SEED_MIN`, `SEED_LIMIT`).

    Raises:
        SeedError: It is not an integer or is out of range (the message says which range).
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise SeedError(f"a seed is an integer, not {type(seed).__name__}")
    if not SEED_MIN <= seed < SEED_LIMIT:
        raise SeedError("a seed must lie in [-2^63, 2^128)")
    return seed


def is_sealed_range(seed: int) -> bool:
    """Whether `seed` is in the sealed range [2^64, 2^128): keyed derivations, never shown."""
    return seed >= SEALED_FLOOR


def draw_sealed_seed() -> int:
    """A fresh seed from the operating system's CSPRNG, uniform over the sealed range."""
    return SEALED_FLOOR + secrets.randbelow(SEED_LIMIT - SEALED_FLOOR)


def seed_label(seed: int) -> str:
    """How names and printed lines refer to a seed: `s<seed>` for a public seed, `sealed` for
    one of the sealed range (never its value)."""
    return "sealed" if is_sealed_range(seed) else f"s{seed}"


@functools.lru_cache(maxsize=256)
def keyed_digest(seed: int, purpose: str, size: int = 32) -> bytes:
    """BLAKE2b keyed with the seed (16 bytes, big-endian), personalised with `purpose`.

    Distinct purposes give independent keys (domain separation); no output says anything
    about the seed or about the output of another purpose.

    Args:
        seed: A seed of the sealed range.
        purpose: At most 16 ASCII bytes naming what the digest keys, e.g. ``"part:prices"``.
        size: Digest length in bytes (1–64).
    """
    if not is_sealed_range(check_seed(seed)):
        raise SeedError("keyed derivations are for seeds of the sealed range")
    person = purpose.encode("ascii")
    return hashlib.blake2b(key=seed.to_bytes(16, "big"), person=person, digest_size=size).digest()


def keyed_values(seed: int, purpose: str, n: int, modulus: int) -> list[int]:
    """`n` distinct integers in [0, `modulus`), each a keyed hash of (purpose, position).

    Position i's value is BLAKE2b(key=seed, person=purpose, data=i ‖ attempt) mod `modulus`,
    where attempt counts the values that were already taken by earlier positions (rare when
    `modulus` ≫ n²), so the list depends on nothing but the seed and is unique.
    """
    if n > modulus:
        raise ValueError("cannot draw more distinct values than the modulus allows")
    key, person = seed.to_bytes(16, "big"), purpose.encode("ascii")
    taken: set[int] = set()
    values: list[int] = []
    for position in range(n):
        for attempt in range(1 << 16):
            data = position.to_bytes(8, "big") + attempt.to_bytes(4, "big")
            digest = hashlib.blake2b(data, key=key, person=person, digest_size=16).digest()
            value = int.from_bytes(digest, "big") % modulus
            if value not in taken:
                break
        else:
            raise ValueError(f"no free value for position {position}: the modulus is too small")
        taken.add(value)
        values.append(value)
    return values


def new_salt() -> str:
    """A fresh salt for a commitment (hex)."""
    return secrets.token_hex(SALT_BYTES)


def commitment(seed: int, salt: str) -> str:
    """The commitment to (seed, salt): SHA-256 hex of ``merchantbench-seed-v1:<salt>:<seed>``."""
    return hashlib.sha256(f"{_COMMIT_PREFIX}:{salt}:{seed}".encode("ascii")).hexdigest()


def verify_commitment(seed: int, salt: str, expected: str) -> bool:
    """Whether (seed, salt) opens the commitment `expected` (compared in constant time)."""
    return hmac.compare_digest(commitment(seed, salt), expected.lower())
