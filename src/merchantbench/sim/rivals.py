"""What a merchant of a market sees of the other merchants (docs/design.md §11): what a buyer sees.

For a product: how many other merchants list it, their sale prices and their star levels, as
they stood when the window opened (windows are simultaneous: nothing a merchant does in a
window shows to another before the next window). Never who they are, their cash, orders,
outcomes, memory or traces.

`Offers` is the market's board of one window: product → the (merchant, sale price, stars) of
every open listing, taken at the window's opening. `RivalView` is one merchant's window on it:
the same rows without the merchant's own and without names, cheapest first.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, order=True)
class Offer:
    """Another seller's offer of a product, as a buyer sees it."""

    price_fen: int
    stars: int


@dataclass(slots=True)
class Offers:
    """The market's offers at the opening of the current window."""

    by_product: dict[int, list[tuple[str, int, int]]] = field(default_factory=dict)

    def set(self, rows: dict[int, list[tuple[str, int, int]]]) -> None:
        self.by_product = rows


class RivalView:
    """One merchant's view of the other sellers (read by its tools, never changed by them)."""

    def __init__(self, offers: Offers, merchant: str) -> None:
        self._offers = offers
        self.merchant = merchant

    def of(self, product: int) -> list[Offer]:
        """The other merchants' offers of `product`, cheapest first (then by stars)."""
        rows = self._offers.by_product.get(product, ())
        return sorted(Offer(price, stars) for who, price, stars in rows if who != self.merchant)

    def contested(self, products: list[int]) -> list[list[Offer]]:
        """`of` for several products."""
        return [self.of(product) for product in products]
