"""What the conformance check drives: an adapter opens store runs; a store run answers.

A front end (in-process Python, HTTP, MCP, Gymnasium) is checked through an `Adapter`: it opens
one `StoreRun` per (scenario, seed). A store run offers two sides:

- the agent side, with the names and meaning of `merchantbench.surface.AgentSurface`:
  `brief()`, `observation()`, `tool_schemas()`, `call(tool, args, idempotency_key)`, `window`,
  `hour`, `over`. The check plays its action script through these only;
- the host side the check needs to judge what it saw: `state_hash()`, `snapshot()` /
  `restore(blob)`, `ledger()` (the accounts and the sums of the ledger's movements) and
  `close()`. An out-of-process front end serves these on its operator (admin) side.

Adapters are found by name in one table (`ADAPTERS`); a front end adds its own with
`register_adapter("mine", "my_front_end.check_adapter:MyAdapter")`, which is imported
only when that adapter is asked for, so its dependencies stay optional.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from merchantbench.scenario import Scenario

__all__ = [
    "ADAPTERS",
    "Adapter",
    "AdapterError",
    "LedgerReport",
    "StoreRun",
    "adapter_names",
    "get_adapter",
    "register_adapter",
]


@dataclass(frozen=True, slots=True)
class LedgerReport:
    """The four accounts and the ledger behind them, integer fen (docs/design.md §2).

    Attributes:
        initial: Opening (balance, deposit); in transit and receivable open at 0.
        accounts: (balance, deposit, in_transit, receivable) now.
        movements: The sums of every ledger entry's change, per account, in the same order.
        net_assets: Net assets as the host reports them.
        drained: True once the run has ended and every order has run to its end.
    """

    initial: tuple[int, int]
    accounts: tuple[int, int, int, int]
    movements: tuple[int, int, int, int]
    net_assets: int
    drained: bool


@runtime_checkable
class StoreRun(Protocol):
    """One open store run, seen by the check from both sides (see the module docstring)."""

    def brief(self) -> str: ...
    def observation(self) -> str: ...
    def tool_schemas(self) -> list[dict[str, Any]]: ...
    def call(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]: ...
    @property
    def window(self) -> int: ...
    @property
    def hour(self) -> int: ...
    @property
    def over(self) -> bool: ...

    def state_hash(self) -> str: ...
    def snapshot(self) -> bytes: ...
    def restore(self, blob: bytes) -> None: ...
    def ledger(self) -> LedgerReport: ...
    def close(self) -> None: ...


class Adapter(Protocol):
    """A front end under check: opens independent store runs."""

    name: str

    def open(self, scenario: Scenario, seed: int) -> StoreRun:
        """A fresh run of `scenario` with `seed`, at window 0, sharing nothing with others."""
        ...


class AdapterError(ValueError):
    """An adapter name that is not registered or cannot be loaded; the message says why."""


AdapterFactory = Callable[[], Adapter]
# name → factory, or "module:attribute" of one, imported when first asked for.
ADAPTERS: dict[str, str | AdapterFactory] = {
    "python": "merchantbench.check.python_adapter:PythonAdapter",
    "http": "merchantbench.check.served:HttpAdapter",
    "mcp": "merchantbench.check.served:McpAdapter",
    "gym": "merchantbench.check.gym_adapter:GymAdapter",
    "market": "merchantbench.check.market_adapter:MarketAdapter",
    "http-market": "merchantbench.check.served:HttpMarketAdapter",
    "mcp-market": "merchantbench.check.served:McpMarketAdapter",
}


def register_adapter(name: str, factory: str | AdapterFactory) -> None:
    """Make an adapter available to `merchantbench check --adapter NAME`.

    Args:
        name: The adapter's name on the command line.
        factory: A callable returning the adapter, or its "module:attribute" path (imported
            lazily, so a front end's optional dependencies load only when it is checked).
    """
    ADAPTERS[name] = factory


def adapter_names() -> list[str]:
    """The registered adapter names, sorted."""
    return sorted(ADAPTERS)


def get_adapter(name: str) -> Adapter:
    """Build the adapter registered under `name`; `AdapterError` says why it cannot be."""
    if name not in ADAPTERS:
        raise AdapterError(f"unknown adapter {name!r}; choose from {', '.join(adapter_names())}")
    factory = ADAPTERS[name]
    if isinstance(factory, str):
        module, _, attribute = factory.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise AdapterError(f"adapter {name!r} cannot be loaded: {exc}") from None
    return factory()  # type: ignore[operator]
