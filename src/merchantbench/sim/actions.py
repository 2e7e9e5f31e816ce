"""What a store can do while a window is open: list, delist and reprice. A mixin of the engine.

Every action validates completely before it changes anything: a rejected action raises
`ActionRejected` with a stable code and leaves the state untouched. A product that has not
launched yet is reported exactly like a product that does not exist, so an error never reveals
the future.
"""

from __future__ import annotations

from bisect import bisect_left

from merchantbench.catalog.market import Market
from merchantbench.money import rmb
from merchantbench.refusals import Refusal
from merchantbench.scenario import Scenario
from merchantbench.sim.state import Listing, ListingSpell, StoreState
from merchantbench.sim.suppliers import SupplierBook, SupplierState


class ActionRejected(Exception):
    """An action the rules do not allow. `code` is stable; `message` is for the agent."""

    def __init__(self, code: str, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.index = index  # position in a batch, when the action was a batch


class StoreActions:
    scenario: Scenario
    market: Market
    _state: StoreState
    # The engine's listings as a window reads them (products ascending, their prices and
    # listing hours); None once a listing comes or goes.
    _listed: tuple[list[int], list[int], list[int]] | None
    _spans: dict[int, tuple[int, int, SupplierState]]  # per product, the last span looked up
    suppliers: SupplierBook

    def _supplier_state(self, product: int, hour: int) -> SupplierState:
        """`suppliers.state(product, hour)`, through this store's memo of each product's last
        span (a book shared by stores at other hours, the classic RL env's, keeps none that
        lasts: each look-up would search the product's year again)."""
        known = self._spans.get(product)
        if known is None or not known[0] <= hour < known[1]:
            known = self._spans[product] = self.suppliers.state_span(product, hour)
        return known[2]

    def product_index(self, product_id: str, index: int | None = None) -> int:
        """Index of a product the store may see now; unknown and unlaunched alike are rejected."""
        i = self.market.index_of.get(product_id)
        if i is None or int(self.market.launch_day[i]) > self._state.t // 24:
            raise ActionRejected(
                Refusal.UNKNOWN_PRODUCT, f"no product with id {product_id!r}", index
            )
        return i

    def max_price_fen(self, product: int) -> int:
        cost = self._supplier_state(product, self._state.t).price_fen
        return int(cost * self.scenario.demand.max_price_multiple_of_cost)

    def check_store_open(self) -> None:
        """Refuse any change once the store is closed (the deposit ran out): the one
        store-closed check, used by the engine's actions and, first of all, by the tools."""
        if self._state.closed:
            raise ActionRejected(
                Refusal.STORE_CLOSED, "the store is closed for good; no more changes"
            )

    def _check_open(self) -> None:
        self.check_store_open()
        if self._state.t >= self.scenario.clock.hours:
            raise ActionRejected(Refusal.RUN_OVER, "the year is over; no more changes")

    def _check_price(self, product: int, price_fen: int, index: int | None) -> None:
        top = self.max_price_fen(product)
        if not 1 <= price_fen <= top:
            raise ActionRejected(
                Refusal.PRICE_OUT_OF_RANGE,
                f"sale price must be between 0.01 and {rmb(top):.2f} RMB "
                f"(100 × the current procurement price)",
                index,
            )

    def list_products(self, items: list[tuple[int, int]]) -> None:
        """List (product, sale price in fen) pairs as one batch: all or nothing."""
        self._check_open()
        st = self._state
        cap = self.scenario.tools.max_active_listings
        if len(st.listings) + len(items) > cap:
            raise ActionRejected(
                Refusal.LISTING_LIMIT,
                f"{len(st.listings)} of {cap} listing slots are used; cannot add {len(items)} more",
            )
        seen: set[int] = set()
        for index, (product, price) in enumerate(items):
            if product in st.listings or product in seen:
                raise ActionRejected(Refusal.ALREADY_LISTED, "product is already listed", index)
            if not self._supplier_state(product, st.t).available:
                raise ActionRejected(
                    Refusal.PRODUCT_UNAVAILABLE, "the supplier has delisted this product", index
                )
            self._check_price(product, price, index)
            seen.add(product)
        for product, price in items:
            cost = self._supplier_state(product, st.t).price_fen
            st.spells.append(ListingSpell(product, st.t, price, cost, price))
            st.listings[product] = Listing(product, price, st.t, len(st.spells) - 1)
        self._listed = None

    def delist_products(self, products: list[int]) -> None:
        """Take listings down (all or nothing). Relisting later restarts the exposure ramp."""
        self._check_open()
        for index, product in enumerate(products):
            if product not in self._state.listings:
                raise ActionRejected(
                    Refusal.NOT_LISTED, "product is not listed in your store", index
                )
        if len(set(products)) != len(products):
            raise ActionRejected(Refusal.DUPLICATE, "a product appears twice in the request")
        for product in products:
            listing = self._state.listings.pop(product)
            self._state.spells[listing.spell].delisted_t = self._state.t
        self._listed = None

    def set_price(self, product: int, price_fen: int) -> None:
        """Change a listing's sale price; exposure is kept."""
        self._check_open()
        listing = self._state.listings.get(product)
        if listing is None:
            raise ActionRejected(Refusal.NOT_LISTED, "product is not listed in your store")
        self._check_price(product, price_fen, None)
        self._reprice(listing, price_fen)

    def set_prices(self, items: list[tuple[int, int]]) -> None:
        """Change several listings' sale prices (product, price in fen) as one batch: all or
        nothing, each checked as `set_price` checks it (a refusal names its position)."""
        self._check_open()
        listings = self._state.listings
        for index, (product, price) in enumerate(items):
            if product not in listings:
                raise ActionRejected(
                    Refusal.NOT_LISTED, "product is not listed in your store", index
                )
            self._check_price(product, price, index)
        for product, price in items:
            self._reprice(listings[product], price)

    def _reprice(self, listing: Listing, price_fen: int) -> None:
        listing.price = price_fen
        self._state.spells[listing.spell].last_price = price_fen
        listed = self._listed
        if listed is not None:  # the listings as a window reads them: the one price replaced
            products, prices, since = listed
            prices = prices.copy()  # (a window made before keeps its lists)
            prices[bisect_left(products, listing.product)] = price_fen
            self._listed = (products, prices, since)
