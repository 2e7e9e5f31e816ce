"""The store status: the public numbers of a store as a window opens, as one typed object.

`store_status(ctx)` is the single definition of these numbers. The observation text
(`tools.observation`) and `get_store_snapshot` are rendered from it, and every front end reads
it (`AgentSurface.status()`): the playground's page and charts, Gymnasium's `obs["store"]`, the
HTTP host's tick and JSON API, the MCP resource `merchantbench://store`.

It holds only what the agent already sees (the observation's clock, cash, rating and listings;
the snapshot's open orders and calls left; the orders it has received, which its order tools
list): no future demand, no outcome draws, no supplier hazards, no seed. Money is in RMB with
two decimals, as every tool answers (`money.rmb`: exact for any amount a store holds, so
`money.fen(status.balance)` gives back the ledger's fen).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from merchantbench.money import rmb
from merchantbench.tools.context import clock_text, date_of, open_order_ids

if TYPE_CHECKING:
    from merchantbench.tools.context import StoreContext

__all__ = ["ACCOUNTS", "StoreStatus", "accounts", "net_assets_at", "store_status"]

# The cash accounts and net assets, as the status, query_balance and the snapshot name them.
ACCOUNTS = ("balance", "deposit", "in_transit", "receivable", "net_assets")


class StoreStatus(BaseModel):
    """Where a store stands as its open window began (or where it ended, once `over`).

    Its JSON form is `model_dump(mode="json")` (`to_json()`); `StoreStatus.model_json_schema()`
    documents every field.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # --- the clock ------------------------------------------------------------------------------
    window: int = Field(description="The open window, 0-based (windows_total once over).")
    windows_total: int = Field(description="The scheduled number of windows of the run.")
    windows_left: int = Field(description="Windows still to play, the open one included.")
    hour: int = Field(description="The open window's first hour since the start, 0-based.")
    day: int = Field(description="The day of the run, 1-based.")
    hour_of_day: int = Field(description="The hour of the day, 0-23.")
    at: str = Field(description='The time as the tools write it: "Day N HH:00".')
    date: str = Field(description="The calendar date, ISO 8601.")
    over: bool = Field(description="The run has ended (horizon reached or store closed).")
    # --- the store ------------------------------------------------------------------------------
    store: Literal["open", "closed"] = Field(description="closed once the deposit ran out.")
    closed_at: str | None = Field(description="When the store was closed, or null.")
    # --- money (RMB) ----------------------------------------------------------------------------
    balance: float = Field(description="Spendable cash, RMB.")
    deposit: float = Field(description="Security deposit, RMB.")
    in_transit: float = Field(description="Paid to suppliers for orders not yet delivered, RMB.")
    receivable: float = Field(description="Sale prices of delivered orders not yet settled, RMB.")
    net_assets: float = Field(description="balance + deposit + in_transit + receivable, RMB.")
    net_assets_change: float | None = Field(
        description="Change of net assets since the previous window opened (null in the first)."
    )
    # --- rating ---------------------------------------------------------------------------------
    rating: float = Field(description="The published store rating, 0-5.")
    stars: int = Field(description="The rating's stars, 1-5.")
    rating_multiplier: float = Field(description="The stars' multiplier of orders.")
    # --- listings and orders ----------------------------------------------------------------------
    active_listings: int = Field(description="Products listed now.")
    listing_cap: int = Field(description="At most this many active listings.")
    open_orders: int = Field(description="Orders still running (not yet ended).")
    orders_placed: int = Field(
        description="Customer orders placed since the start, procured or not (stockouts too)."
    )
    # --- calls ----------------------------------------------------------------------------------
    calls_left_in_window: int = Field(description="Tool calls left in the open window.")
    calls_per_window: int = Field(description="Tool calls a window allows besides end_of_step.")

    def to_json(self) -> dict[str, Any]:
        """The JSON form (plain types only)."""
        return self.model_dump(mode="json")


def accounts(ctx: StoreContext) -> dict[str, float]:
    """The four cash accounts and net assets now, RMB (named as in `ACCOUNTS`)."""
    a = ctx.engine.state.ledger.accounts
    amounts = (a.balance, a.deposit, a.in_transit, a.receivable, a.net_assets)
    return {name: rmb(amount) for name, amount in zip(ACCOUNTS, amounts, strict=True)}


def net_assets_at(ctx: StoreContext, hour: int) -> int:
    """Net assets (fen) when hour `hour` began."""
    if hour <= 0:
        m = ctx.scenario.money
        return m.initial_balance_fen + m.initial_deposit_fen
    s = ctx.engine.state.samples
    return int(s.balance[hour - 1] + s.deposit[hour - 1] + s.in_transit[hour - 1]
               + s.receivable[hour - 1])  # fmt: skip


def store_status(ctx: StoreContext) -> StoreStatus:
    """The store's public numbers now (see the module docstring)."""
    engine, sc = ctx.engine, ctx.scenario
    state, t = engine.state, engine.t
    rating, since = state.rating, ctx.previous_window_t
    net = state.ledger.accounts.net_assets
    change = None if since < 0 else rmb(net - net_assets_at(ctx, since))
    windows = sc.clock.windows
    return StoreStatus(
        window=engine.window,
        windows_total=windows,
        windows_left=max(windows - engine.window, 0),
        hour=t,
        day=t // 24 + 1,
        hour_of_day=t % 24,
        at=clock_text(t),
        date=date_of(sc.clock.start_date, t // 24).isoformat(),
        over=state.drained,
        store="closed" if state.closed else "open",
        closed_at=clock_text(state.closed_t) if state.closed else None,
        **accounts(ctx),
        net_assets_change=change,
        rating=rating.published,
        stars=rating.stars,
        rating_multiplier=rating.multiplier,
        active_listings=len(state.listings),
        listing_cap=sc.tools.max_active_listings,
        open_orders=len(open_order_ids(state)),
        orders_placed=len(state.orders),
        calls_left_in_window=max(sc.clock.calls_per_window - ctx.window_calls, 0),
        calls_per_window=sc.clock.calls_per_window,
    )
