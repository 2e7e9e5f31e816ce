"""What every stage of the synthetic generator shares: one Philox stream per concern, keyed by
(seed, part), so a change in one part (say titles) never shifts another (say demand); and
per-category constant tables read as arrays over a scenario's categories.

A seed of the sealed range (`merchantbench.seeds`) keys each stream by a keyed hash of the seed
instead (BLAKE2b, personalised with the part), so no output of any part says anything about the
seed, nor about another part's stream."""

from __future__ import annotations

import numpy as np

from merchantbench.seeds import is_sealed_range, keyed_digest

# One Philox stream per concern; the position in this tuple is part of the key, so append only.
PARTS = (
    "suppliers", "supplier_signals", "products", "traps", "prices", "risks", "product_signals",
    "titles", "ids", "trajectories", "base_demand", "launch", "noise", "sales", "title_words",
)  # fmt: skip


def part_rng(seed: int, part: str) -> np.random.Generator:
    """The generator's random stream for one part (a name in `PARTS`) of the market."""
    if is_sealed_range(seed):
        digest = keyed_digest(seed, f"part-{PARTS.index(part)}")
        return np.random.Generator(np.random.Philox(int.from_bytes(digest, "big")))
    key = np.random.SeedSequence([seed % (1 << 64), 0x4D42, PARTS.index(part)])
    return np.random.Generator(np.random.Philox(key))


def per_category(
    table: dict[str, float], categories: tuple[str, ...], default: float
) -> np.ndarray:
    """A per-category constant for each of `categories`, `default` where the table has none."""
    return np.array([table.get(c, default) for c in categories], dtype=np.float64)
