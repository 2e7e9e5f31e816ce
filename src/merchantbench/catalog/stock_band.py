"""What the wholesale site shows of a supplier's stock: a coarse availability band.

A 1688-style product page tells a buyer whether a product can be ordered and whether it is
running short ("in stock", "only a few left", "sold out"); it does not owe a buyer the supplier's
warehouse size. The simulation's stock capacity (and refill rate) are hidden state
(docs/design.md §10), and an exact unit count would give the capacity away: a product nobody has
bought from shows its capacity, and a filter on exact units would find it by bisection. So tools
show, and filter on,
only the band of the current stock:

- `in_stock`: at least `LOW_STOCK_UNITS` units (every product nobody has drawn down: the
  generator's smallest capacity is 50, so an untouched product always shows this band);
- `low`: 1 to `LOW_STOCK_UNITS - 1` units;
- `out_of_stock`: none (a new order now would be a stockout).

The band is a function of the current stock alone; the simulation itself is unchanged.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

StockBand = Literal["in_stock", "low", "out_of_stock"]
AvailableBand = Literal["in_stock", "low"]
LOW_STOCK_UNITS = 50
STOCK_BANDS: tuple[StockBand, ...] = ("out_of_stock", "low", "in_stock")  # least to most

_FLOOR: dict[str, int] = {"out_of_stock": 0, "low": 1, "in_stock": LOW_STOCK_UNITS}


def stock_band(units: int) -> StockBand:
    """The band shown for a current stock of `units`."""
    if units >= LOW_STOCK_UNITS:
        return "in_stock"
    return "low" if units > 0 else "out_of_stock"


def stock_bands(units: np.ndarray) -> list[StockBand]:
    """`stock_band` of each of `units`. Tools show a page of products at a time: a loop over
    plain ints costs less than the numpy operations a whole-array version needs for so few."""
    return [stock_band(n) for n in np.asarray(units).tolist()]


def band_floor(band: str) -> int:
    """The fewest units a product in `band` has: a filter "at least this band" keeps exactly
    the products whose stock is at least this."""
    return _FLOOR[band]
