"""What model calls cost: one record per call, running totals, and the run's budget.

Totals live in the agent, which is pickled into each checkpoint, so a resumed run continues
from the totals at the checkpoint and never counts a call twice. Records carry a `seq` number
so `model_calls.jsonl` can be cut back to the checkpoint, like the trace.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from merchantbench.record.schema import MODEL_CALLS_FILE as MODEL_CALLS_FILE
from merchantbench.record.words import WORDS_KEY


@dataclass(frozen=True)
class CallRecord:
    """One model call as `model_calls.jsonl` records it (a failed call has `error` set).

    Attributes:
        seq: 1-based number of this call in the run.
        window: Window the call was made in.
        model: Model id requested.
        input_tokens: Prompt tokens the server reported (cached ones included).
        cached_tokens: Prompt tokens served from the provider's cache.
        output_tokens: Completion tokens (reasoning included, as the server reports).
        latency_s: Seconds from the first attempt to the final answer, retries included.
        cost: Cost of the call at the model's prices; None when a billed price is not stated
            (unknown, never counted as 0).
        finish_reason: The server's finish reason (`tool_calls`, `stop`, `length`, ...).
        retries: Attempts that failed and were retried.
        tool_calls: Tool calls in the answer.
        parse_errors: Tool calls that could not be parsed (bad JSON, unknown tool).
        error: Why the call failed after its retries, if it did.
        words: What the model said (`record.words.words_of_message`), if the harness saw it;
            the run record keeps it in `model_words.jsonl.gz`, not in `model_calls.jsonl`.
    """

    seq: int
    window: int
    model: str
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost: float | None = 0.0
    finish_reason: str | None = None
    retries: int = 0
    tool_calls: int = 0
    parse_errors: int = 0
    error: str | None = None
    words: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def as_json(self) -> dict[str, Any]:
        """The call as an agent drains it: `model_calls.jsonl`'s line, with the words under
        `words` when there are any (the run lifecycle files them apart)."""
        entry = dict(vars(self))  # flat fields: no need for asdict's deep copy
        entry["latency_s"] = round(self.latency_s, 4)
        if entry.pop("words") is not None:
            entry[WORDS_KEY] = self.words
        return entry


@dataclass
class UsageTotals:
    """Sums over a run's model calls, reported in run.json under `llm_usage`; `cost` is None
    (unknown) once a call's cost was unknown."""

    calls: int = 0
    failed_calls: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = 0.0
    retries: int = 0
    parse_errors: int = 0
    forced_windows: int = 0
    compactions: int = 0
    latency_s: float = 0.0
    wall_seconds: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, record: CallRecord) -> None:
        self.calls += 1
        self.failed_calls += record.error is not None
        self.input_tokens += record.input_tokens
        self.cached_tokens += record.cached_tokens
        self.output_tokens += record.output_tokens
        self.cost = None if self.cost is None or record.cost is None else self.cost + record.cost
        self.retries += record.retries
        self.parse_errors += record.parse_errors
        self.latency_s += record.latency_s

    def as_json(self) -> dict[str, Any]:
        totals = asdict(self)
        totals["tokens"] = self.tokens
        totals["cost"] = None if self.cost is None else round(self.cost, 6)
        totals["latency_s"] = round(self.latency_s, 3)
        totals["wall_seconds"] = round(self.wall_seconds, 3)
        return totals


@dataclass(frozen=True)
class Budget:
    """Per-run limits; None means no limit. Wall time counts only the agent's own windows,
    so time spent killed between a checkpoint and a resume is not charged."""

    max_tokens: int | None = None
    max_cost: float | None = None
    max_wall_seconds: float | None = None

    def exceeded(self, usage: UsageTotals, wall_seconds: float) -> str | None:
        """Why the budget is spent (one line for run.json), or None if it is not."""
        if self.max_tokens is not None and usage.tokens >= self.max_tokens:
            return f"budget: {usage.tokens} tokens used, limit {self.max_tokens}"
        if self.max_cost is not None and usage.cost is None:
            return f"budget: cost unknown (a price is not stated), limit {self.max_cost:g}"
        if self.max_cost is not None and usage.cost is not None and usage.cost >= self.max_cost:
            return f"budget: cost {usage.cost:.4f} reached limit {self.max_cost:g}"
        if self.max_wall_seconds is not None and wall_seconds >= self.max_wall_seconds:
            return f"budget: {wall_seconds:.0f} s of wall time, limit {self.max_wall_seconds:g}"
        return None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)
