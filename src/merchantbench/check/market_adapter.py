"""The market adapter: the action script plays one merchant of a market of two (SPEC §11).

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
from merchantbench.check.python_adapter import PythonRun
from merchantbench.scenario import Scenario
from merchantbench.session import MarketSession, Session

__all__ = [
    "CHECKED",
    "OTHER_MERCHANT_MARK",
    "RIVAL",
    "RIVAL_AGENT",
    "MarketAdapter",
    "MarketRun",
    "competing",
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


class MarketRun(PythonRun):
    """The checked merchant's session of a two-merchant market; the host plays the rival."""

    def __init__(self, market: MarketSession) -> None:
        super().__init__(market.session(CHECKED))
        self.market = market
        self.rival = make_agent(RIVAL_AGENT, {})
        self._rival_window = -1
        self._rival_turn()

    def _rival_turn(self) -> None:
        self._rival_window = rival_turn(self.market.session(RIVAL), self.rival, self._rival_window)

    def call(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        result = super().call(tool, args, idempotency_key)
        self._rival_turn()
        return result

    def state_hash(self) -> str:
        return self.market.state_hash()

    def snapshot(self) -> bytes:
        state = (self.market.snapshot(), self.rival, self._rival_window)
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, blob: bytes) -> None:
        market, self.rival, self._rival_window = pickle.loads(blob)
        self.market.restore(market)

    def ledger(self) -> LedgerReport:
        report = super().ledger()
        if not self.market.over:  # the merchant's own run ends only when the market drains
            return LedgerReport(
                report.initial, report.accounts, report.movements, report.net_assets, False
            )
        return report


class MarketAdapter:
    """Opens `MarketRun`s on the cached market of (scenario, seed)."""

    name = "market"

    def open(self, scenario: Scenario, seed: int) -> MarketRun:
        return MarketRun(MarketSession.open(competing(scenario), seed, [CHECKED, RIVAL]))
