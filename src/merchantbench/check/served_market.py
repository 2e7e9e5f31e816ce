"""The market adapters over the served front ends: `http-market` and `mcp-market`.

As `--adapter market` (check/market_adapter.py), the action script plays one merchant
(`check`) of a market of two, beside a rule-based rival that writes a private note into its
memory every window; but here the market is a served run of `merchantbench serve`
(`MarketHost`), and the checked merchant plays over the network with its own token only: the
JSON API at `/api/runs/{run}/agents/check/...` (with the artifact protocol's schema and first
packet) for `http-market`, the official MCP client at `/runs/{run}/agents/check/mcp` for
`mcp-market`. The `hidden` check's leak scan then covers everything the merchant is sent over
the wire: the rival's note, like any hidden field, must show nowhere.

The rival plays host side, in process (`MarketHost.host_turn`, under the market's lock), once
per window as the window opens, before the checked merchant's first call: so the checked
merchant's `end_of_step` is the window's last close, and over MCP (where `end_of_step` answers
with the next window) it never waits. The host side (state hash, snapshot, restore, ledger) is
the market's, as for the other served adapters.
"""

from __future__ import annotations

import pickle
from typing import Any

from merchantbench.agents.registry import make_agent
from merchantbench.check.adapter import LedgerReport
from merchantbench.check.market_adapter import CHECKED, RIVAL, RIVAL_AGENT, competing, rival_turn
from merchantbench.check.python_adapter import PythonRun
from merchantbench.check.served import HttpRun, LiveServe, McpRun, _ServedAdapter, _ServedRun
from merchantbench.scenario import Scenario
from merchantbench.session import Session

__all__ = ["HttpMarketAdapter", "HttpMarketRun", "McpMarketAdapter", "McpMarketRun"]


class _ServedMarket(_ServedRun):
    """The host side of a served market of two; the checked merchant's routes."""

    def __init__(self, serve: LiveServe, scenario: Scenario, seed: int) -> None:
        self.serve = serve
        self.host, tokens = serve.create_market(competing(scenario), seed, [CHECKED, RIVAL])
        self.token = tokens[CHECKED]
        self.rival = make_agent(RIVAL_AGENT, {})
        self._rival_window = -1
        self._rival_turn()

    def _rival_turn(self) -> None:
        def play(session: Session) -> None:
            self._rival_window = rival_turn(session, self.rival, self._rival_window)

        self.serve.on_loop(self.host.host_turn(RIVAL, play))

    @property
    def merchant(self) -> Session:
        return self.host.channels[CHECKED].session  # type: ignore[no-any-return]

    @property
    def agent_id(self) -> str:
        return CHECKED

    @property
    def agent_api(self) -> str:
        return f"/api/runs/{self.host.run_id}/agents/{CHECKED}"

    @property
    def mcp_path(self) -> str:
        return f"/runs/{self.host.run_id}/agents/{CHECKED}/mcp"

    @property
    def surface(self) -> Any:
        return self.merchant.surface

    def over_in(self, summary: dict[str, Any]) -> bool:
        return bool(summary["over"] or summary["agents"][CHECKED]["closed"])

    def state_hash(self) -> str:
        return str(self.host.life.market.state_hash())

    def snapshot(self) -> bytes:
        state = (self.host.life.market.snapshot(), self.rival, self._rival_window)
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, blob: bytes) -> None:
        market, self.rival, self._rival_window = pickle.loads(blob)
        self.serve.on_loop(self.host.rewind(market))

    def ledger(self) -> LedgerReport:
        report = PythonRun(self.merchant).ledger()
        if not self.host.life.market.over:  # the merchant's run ends when the market drains
            return LedgerReport(
                report.initial, report.accounts, report.movements, report.net_assets, False
            )
        return report


class HttpMarketRun(HttpRun, _ServedMarket):
    """The checked merchant over HTTP (the rival plays as each window opens)."""

    def call(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        self._rival_turn()
        result = super().call(tool, args, idempotency_key)
        self._rival_turn()
        return result

    def restore(self, blob: bytes) -> None:
        _ServedMarket.restore(self, blob)
        self._clock = None


class McpMarketRun(McpRun, _ServedMarket):
    """The checked merchant over MCP (the rival plays as each window opens)."""

    def call(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        self._rival_turn()
        result = super().call(tool, args, idempotency_key)
        self._rival_turn()
        return result

    def restore(self, blob: bytes) -> None:
        _ServedMarket.restore(self, blob)


class HttpMarketAdapter(_ServedAdapter):
    """`merchantbench check --adapter http-market`."""

    name = "http-market"

    def open(self, scenario: Scenario, seed: int) -> HttpMarketRun:
        return HttpMarketRun(self.server(), scenario, seed)


class McpMarketAdapter(_ServedAdapter):
    """`merchantbench check --adapter mcp-market`."""

    name = "mcp-market"

    def open(self, scenario: Scenario, seed: int) -> McpMarketRun:
        return McpMarketRun(self.server(), scenario, seed)
