"""What to run (`RunSpec`), where by default (`default_run_dir`), and the one-line refusal of a
run that cannot start or resume (`RunError`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from merchantbench.agents.load import agent_slug
from merchantbench.record.sealed import SealedSeed
from merchantbench.scenario import Scenario
from merchantbench.seeds import seed_label


class RunError(Exception):
    """A run that cannot start or resume; the message says why in one line."""


@dataclass(frozen=True)
class RunSpec:
    """One run: its agent (a registered name, or the driver of a run played from outside:
    `human`, `external`, `mcp`, `inspect`), scenario, seed and settings."""

    agent: str
    scenario: Scenario
    seed: int = field(repr=False)  # a sealed seed must never reach a log line
    agent_settings: dict[str, Any] = field(default_factory=dict)
    catalog: Path | None = None  # a real catalog directory instead of the synthetic market
    sealed: SealedSeed | None = None  # a sealed run: `seed` is `sealed.seed`, never recorded

    @classmethod
    def sealed_run(cls, agent: str, scenario: Scenario, **options: Any) -> RunSpec:
        """The spec of a new sealed run: a fresh 128-bit seed and salt from the OS."""
        sealed = SealedSeed.draw()
        return cls(agent, scenario, sealed.seed, sealed=sealed, **options)

    @property
    def seed_pin(self) -> str:
        """What the record pins of the seed (`RunManifest.seed_pin`): the seed, or for a sealed
        run its commitment."""
        if self.sealed is not None:
            return f"sealed:{self.sealed.commitment.sha256}"
        return str(self.seed)

    @property
    def commitment(self) -> str | None:
        """The seed commitment a sealed run pins (never its seed); None for a public seed."""
        return None if self.sealed is None else self.sealed.commitment.sha256


def default_run_dir(spec: RunSpec, root: Path = Path("runs")) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    label = "sealed" if spec.sealed is not None else seed_label(spec.seed)
    base = root / f"{agent_slug(spec.agent)}-{spec.scenario.name}-{label}-{stamp}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path
