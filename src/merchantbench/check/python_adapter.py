"""The in-process adapter: a `Session` on the host side, its `AgentSurface` on the agent side."""

from __future__ import annotations

from typing import Any, ClassVar

from merchantbench.check.adapter import LedgerReport
from merchantbench.scenario import Scenario
from merchantbench.session import Session

__all__ = ["PythonAdapter", "PythonRun", "session_ledger"]


def session_ledger(session: Session, drained: bool) -> LedgerReport:
    """A merchant's accounts and the sums of its ledger's movements (`drained`: its run has
    ended and every order has run to its end)."""
    ledger = session.engine.state.ledger
    sums = [0, 0, 0, 0]
    for entry in ledger.entries:
        sums[0] += entry.d_balance
        sums[1] += entry.d_deposit
        sums[2] += entry.d_in_transit
        sums[3] += entry.d_receivable
    return LedgerReport(
        initial=(ledger.initial_balance, ledger.initial_deposit),
        accounts=ledger.accounts.as_tuple(),
        movements=(sums[0], sums[1], sums[2], sums[3]),
        net_assets=ledger.accounts.net_assets,
        drained=drained,
    )


class PythonRun:
    """A store run in this process. Agent calls go through `session.surface` only."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.surface = session.surface

    # --- agent side: the surface ----------------------------------------------------------------
    def brief(self) -> str:
        return self.surface.brief()

    def observation(self) -> str:
        return self.surface.observation()

    def tool_schemas(self) -> list[dict[str, Any]]:
        return self.surface.tool_schemas()

    def call(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        return self.surface.call(tool, args, idempotency_key)

    @property
    def window(self) -> int:
        return self.surface.window

    @property
    def hour(self) -> int:
        return self.surface.hour

    @property
    def over(self) -> bool:
        return self.surface.over

    # --- host side ------------------------------------------------------------------------------
    def state_hash(self) -> str:
        return self.session.state_hash()

    def snapshot(self) -> bytes:
        return self.session.snapshot()

    def restore(self, blob: bytes) -> None:
        self.session.restore(blob)

    def ledger(self) -> LedgerReport:
        return session_ledger(self.session, self.session.over)

    def close(self) -> None:
        """Nothing to release in process."""


class PythonAdapter:
    """Opens `PythonRun`s on the cached market of (scenario, seed)."""

    name = "python"
    # A subclass may wrap runs differently (the check's own tests plant faults this way).
    run_type: ClassVar[type[PythonRun]] = PythonRun

    def open(self, scenario: Scenario, seed: int) -> PythonRun:
        return self.run_type(Session.open(scenario, seed))
