"""What every stage of the synthetic generator shares: one Philox stream per concern, keyed by
(seed, part), so a change in one part (say titles) never shifts another (say demand); and
per-category constant tables read as arrays over a scenario's categories."""

from __future__ import annotations

import numpy as np

# One Philox stream per concern; the position in this tuple is part of the key, so append only.
PARTS = (
    "suppliers", "supplier_signals", "products", "traps", "prices", "risks", "product_signals",
    "titles", "ids", "trajectories", "base_demand", "launch", "noise", "sales", "title_words",
)  # fmt: skip


def part_rng(seed: int, part: str) -> np.random.Generator:
    """The generator's random stream for one part (a name in `PARTS`) of the market."""
    key = np.random.SeedSequence([seed % (1 << 64), 0x4D42, PARTS.index(part)])
    return np.random.Generator(np.random.Philox(key))


def per_category(
    table: dict[str, float], categories: tuple[str, ...], default: float
) -> np.ndarray:
    """A per-category constant for each of `categories`, `default` where the table has none."""
    return np.array([table.get(c, default) for c in categories], dtype=np.float64)
