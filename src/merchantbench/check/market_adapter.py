"""The market adapter: the action script plays one merchant of a market of two (docs/design.md §11).

`merchantbench check --adapter market` holds a merchant of a market to the single store's
contract (determinism, snapshot and restore of the whole market, refusals, the ledger, no
hidden state), with a rival merchant beside it: the rule-based baseline, which lists the best
sellers the script lists too, under `market.seller_substitution` = 4 unless the scenario sets
its own. The rival acts at each window's opening, and writes a private note
(`OTHER_MERCHANT_MARK`) into its memory document every window: the `hidden` check fails if
that note, or anything else hidden, shows in any output the checked merchant sees.
"""

from __future__ import annotations

import pickle
from typing import Any

from merchantbench.agents.base import BaseAgent
from merchantbench.agents.registry import make_agent
from merchantbench.check.adapter import LedgerReport
from merchantbench.check.checks import OTHER_MERCHANT_MARK
from merchantbench.check.python_adapter import PythonRun, session_ledger
from merchantbench.scenario import Scenario
from merchantbench.session import MarketSession, Session

__all__ = [
    "CHECKED",
    "OTHER_MERCHANT_MARK",
    "RIVAL",
    "RIVAL_AGENT",
    "MarketAdapter",
    "MarketRun",
    "Rival",
    "competing",
    "merchant_ledger",
    "rival_turn",
]

CHECKED, RIVAL = "check", "rival"
RIVAL_AGENT = "rule-based"
COMPETING_SELLERS = 4.0


def competing(scenario: Scenario) -> Scenario:
    """The scenario with sellers that compete for buyers (β = 4) unless it sets its own β."""
    if scenario.market.seller_substitution != 1.0:
        return scenario
    market = scenario.market.model_copy(update={"seller_substitution": COMPETING_SELLERS})
    return scenario.model_copy(update={"market": market})


def rival_turn(session: Session, rival: BaseAgent, last: int) -> int:
    """The rival acts once in each window, on its opening state (the order of merchants
    within a window changes nothing): it writes its private note, plays, and closes its
    window. Returns the window it last played."""
    window = session.window
    if session.over or session.waiting or last == window:
        return last
    note = f"{OTHER_MERCHANT_MARK} window {window}"
    session.call("write_memory_doc", {"content": note, "mode": "replace"})
    rival.act(session.surface)
    if not session.over and not session.waiting:
        session.force_end_of_step()
    return window


class Rival:
    """The rival merchant (its agent and the window it last played), kept beside the market:
    a snapshot of the market packs both, so a restore rewinds the rival too."""

    def __init__(self) -> None:
        self.agent = make_agent(RIVAL_AGENT, {})
        self.window = -1

    def turn(self, session: Session) -> None:
        """Play the rival's window if it has not played it yet (see `rival_turn`)."""
        self.window = rival_turn(session, self.agent, self.window)

    def pack(self, market: bytes) -> bytes:
        """A snapshot of the market (its own blob) with the rival's state."""
        return pickle.dumps((market, self.agent, self.window), protocol=pickle.HIGHEST_PROTOCOL)

    def unpack(self, blob: bytes) -> bytes:
        """Take back the rival's state of a `pack`ed snapshot; returns the market's blob."""
        market, self.agent, self.window = pickle.loads(blob)
        return bytes(market)


def merchant_ledger(session: Session, market_over: bool) -> LedgerReport:
    """The checked merchant's ledger; its run ends (drains) only when the market's does."""
    return session_ledger(session, session.over and market_over)


class MarketRun(PythonRun):
    """The checked merchant's session of a two-merchant market; the host plays the rival."""

    def __init__(self, market: MarketSession) -> None:
        super().__init__(market.session(CHECKED))
        self.market = market
        self.rival = Rival()
        self.rival.turn(market.session(RIVAL))

    def call(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        result = super().call(tool, args, idempotency_key)
        self.rival.turn(self.market.session(RIVAL))
        return result

    def state_hash(self) -> str:
        return self.market.state_hash()

    def snapshot(self) -> bytes:
        return self.rival.pack(self.market.snapshot())

    def restore(self, blob: bytes) -> None:
        self.market.restore(self.rival.unpack(blob))

    def ledger(self) -> LedgerReport:
        return merchant_ledger(self.session, self.market.over)  # type: ignore[arg-type]


class MarketAdapter:
    """Opens `MarketRun`s on the cached market of (scenario, seed)."""

    name = "market"

    def open(self, scenario: Scenario, seed: int) -> MarketRun:
        return MarketRun(MarketSession.open(competing(scenario), seed, [CHECKED, RIVAL]))
