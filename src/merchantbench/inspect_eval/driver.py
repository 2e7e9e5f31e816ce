"""The driver of a store played through Inspect AI, recorded as `inspect`.

The model and its loop live in Inspect (`merchantbench.inspect_eval.solver`); the run record
names the driver, its settings, usage and model calls. The solver feeds `InspectDriver` one
`CallRecord` per model call; the runner never drives it.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from merchantbench.agents.base import AgentOutcome, AgentSettings
from merchantbench.agents.llm.usage import CallRecord, UsageTotals
from merchantbench.runs.driver import Driver

INSPECT_AGENT = "inspect"


class InspectSettings(AgentSettings):
    """What an Inspect run states in run.json (never an API key).

    Attributes:
        model: Inspect's model name, e.g. `openai-api/local/qwen3` (provider/model).
        max_model_calls: Model calls per window before the window is closed by force.
        compaction: Inspect compaction strategy (`none`, `auto`, `edit`, `trim`, `summary`).
        compaction_threshold: Tokens (or share of the context window, below 1) that trigger it.
    """

    model: str = ""
    max_model_calls: int = Field(default=30, ge=1)
    compaction: str = "none"
    compaction_threshold: float = Field(default=0.9, gt=0)


class InspectDriver(Driver[InspectSettings]):
    """The driver of a run played by Inspect's model API (see the module docstring)."""

    name = "inspect"
    Settings = InspectSettings

    def __init__(self, config: InspectSettings | None = None) -> None:
        super().__init__(config)
        self.usage = UsageTotals()
        self.stop_reason: str | None = None
        self.refused_calls = 0  # tool calls Inspect answered itself (never reached the store)
        self._pending: list[dict[str, Any]] = []

    def settings(self) -> dict[str, Any]:
        return {"front_end": "inspect", **self.config.model_dump(mode="json")}

    def record_call(self, record: CallRecord) -> None:
        """Count one model call and queue its line for model_calls.jsonl."""
        self.usage.add(record)
        self._pending.append(record.as_json())

    @property
    def model_calls_seq(self) -> int:
        return self.usage.calls

    def drain_model_calls(self) -> list[dict[str, Any]]:
        records, self._pending = self._pending, []
        return records

    def outcome(self) -> AgentOutcome:
        usage = {**self.usage.as_json(), "inspect_refused_calls": self.refused_calls}
        return AgentOutcome(usage=usage, stop_reason=self.stop_reason)
