"""The faults the scripted OpenAI-compatible server injects (`scripted_server`): which kinds
exist and a plan of which to inject how often. Apart from the server so that the CLI's help
can list them without importing it."""

from __future__ import annotations

from dataclasses import dataclass

FAULT_KINDS = ("rate_limit", "server_error", "slow", "malformed_args", "truncated", "dropped")


@dataclass(frozen=True)
class FaultPlan:
    """Which faults to inject and how often.

    Attributes:
        rate: Share of requests that meet a fault, 0 to 1.
        kinds: Faults to choose from, uniformly.
        seed: Seed of the fault draws (independent of any simulation seed).
        slow_seconds: Delay of a `slow` answer (the answer itself is fine).
        retry_after: `retry-after` header of a 429, in seconds.
    """

    rate: float = 0.0
    kinds: tuple[str, ...] = FAULT_KINDS
    seed: int = 0
    slow_seconds: float = 0.05
    retry_after: float = 0.0

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(FAULT_KINDS)
        if unknown or not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"bad fault plan: rate {self.rate}, unknown kinds {sorted(unknown)}")
