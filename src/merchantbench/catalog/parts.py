"""What every stage of the synthetic generator shares besides its random streams (one per part
of the market: `merchantbench.random_streams.part_rng`): per-category constant tables read as
arrays over a scenario's categories."""

from __future__ import annotations

import numpy as np


def per_category(
    table: dict[str, float], categories: tuple[str, ...], default: float
) -> np.ndarray:
    """A per-category constant for each of `categories`, `default` where the table has none."""
    return np.array([table.get(c, default) for c in categories], dtype=np.float64)
