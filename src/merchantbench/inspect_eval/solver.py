"""The Inspect solver that plays one store run: Inspect's model, our environment tools.

Per window: the observation is a user message; the model is called (through Inspect's model API,
so any Inspect provider works) and its tool calls run through Inspect's tool executor, up to
`max_model_calls` calls; the window ends when the model calls `end_of_step`. If the model
answers without a tool call, or uses up its calls, the solver closes the window itself with
`surface.force_end_of_step()` (the trace records the close as forced) and tells the model so in
the next window's message. This goes on for every window of the scenario (28 on `smoke`, 730 on
`paper`). An Inspect sample limit (tokens, messages, cost), or a prompt the provider refuses as
longer than the model's context window, stops the model: the remaining windows run idle and
run.json says why (`stop_reason`).

The run record is an ordinary MerchantBench run directory written by a `RunLifecycle`: trace,
tables, `metrics.json`, checkpoints (about every window: a model's window takes seconds), and
`model_calls.jsonl` with one line per Inspect model call. Its driver is `inspect`
(`InspectDriver`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspect_ai.model import (
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    Compact,
    CompactionAuto,
    CompactionEdit,
    CompactionStrategy,
    CompactionSummary,
    CompactionTrim,
    ContentReasoning,
    ModelOutput,
    compaction,
    execute_tools,
    get_model,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolDef
from inspect_ai.util import LimitExceededError

from merchantbench.agents.llm.usage import CallRecord
from merchantbench.inspect_eval.driver import INSPECT_AGENT, InspectDriver, InspectSettings
from merchantbench.inspect_eval.tools import WindowGuard, env_tool_defs
from merchantbench.runs.lifecycle import RunLifecycle
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import Scenario
from merchantbench.surface import AgentSurface

__all__ = ["COMPACTIONS", "RESULT_KEY", "play_store"]

RESULT_KEY = "merchantbench"  # where the solver leaves the run's outcome in the sample store
COMPACTIONS: dict[str, Callable[..., CompactionStrategy]] = {
    "auto": CompactionAuto,
    "edit": CompactionEdit,
    "trim": CompactionTrim,
    "summary": CompactionSummary,
}
_FORCED_NOTES = {
    "no_tool_calls": "you replied without calling a tool",
    "call_limit": "you used all your model calls for the window",
}


def _compactor(
    settings: InspectSettings, prefix: list[Any], tools: list[ToolDef]
) -> Compact | None:
    if settings.compaction == "none":
        return None
    threshold = settings.compaction_threshold
    # A threshold of 1 or more is a token count; below 1, a share of the context window.
    strategy = COMPACTIONS[settings.compaction](
        threshold=int(threshold) if threshold >= 1 else threshold
    )
    return compaction(strategy, prefix=prefix, tools=tools)


class _ContextFull(Exception):
    """The provider refused the prompt as too long, or compaction could not bring it under its
    threshold: the model cannot act any more."""


_INSUFFICIENT = "Compaction insufficient"  # how Inspect's RuntimeError for that begins


def _extends(before: list[Any], after: list[Any]) -> bool:
    """Whether `after` is `before` (the same message objects) with messages appended: what
    Inspect's compaction handler sends while it has not compacted."""
    return len(after) >= len(before) and all(a is b for a, b in zip(before, after, strict=False))


class _Window:
    """The model's side of one run: its conversation in `state.messages`, its tools, its
    compaction handler, and the driver that keeps the run record's usage."""

    def __init__(self, state: TaskState, surface: AgentSurface, agent: InspectDriver) -> None:
        self.state, self.surface, self.agent = state, surface, agent
        self.guard = WindowGuard()
        self.tools = env_tool_defs(surface, self.guard)
        self.model = get_model()
        system = ChatMessageSystem(content=surface.brief())
        state.messages = [system]
        self.compact = _compactor(agent.config, [system], self.tools)
        self.sent: list[Any] = []  # the input of the previous model call
        self.note: str | None = None

    async def play(self) -> None:
        """One window: the observation, then model calls until the window is closed."""
        surface, window = self.surface, self.surface.window
        self.state.messages.append(ChatMessageUser(content=self._prompt()))
        self.note = None
        reason = "call_limit"
        for _ in range(self.agent.config.max_model_calls):
            self.guard.window = window
            output = await self._generate()
            if output.stop_reason == "model_length":
                raise _ContextFull("the conversation outgrew the model's context window")
            if not output.message.tool_calls:
                reason = "no_tool_calls"
                break
            messages, _ = await execute_tools(self.state.messages, self.tools)
            self.state.messages.extend(messages)
            self.agent.refused_calls += sum(
                1 for m in messages if isinstance(m, ChatMessageTool) and m.error is not None
            )
            if surface.window_done(window):
                return
        self.agent.usage.forced_windows += 1
        self.note = _FORCED_NOTES[reason]
        surface.force_end_of_step()

    def _prompt(self) -> str:
        if self.note is None:
            return self.surface.observation()
        return (
            f"(The previous window was closed for you because {self.note}. Call end_of_step "
            f"yourself when you are done.)\n\n{self.surface.observation()}"
        )

    async def _generate(self) -> ModelOutput:
        messages = self.state.messages
        sent = messages
        if self.compact is not None:
            sent = await self._compacted(messages)
        began = time.monotonic()
        output = await self.model.generate(sent, self.tools)
        if self.compact is not None:
            await self.compact.record_output(sent, output)
        messages.append(output.message)
        self.state.output = output
        self.agent.record_call(self._record(output, time.monotonic() - began))
        return output

    async def _compacted(self, messages: list[Any]) -> list[Any]:
        """The input Inspect's compaction handler makes of the conversation; a compaction is
        counted when it no longer extends the previous input (trimmed, edited or summarised)."""
        assert self.compact is not None
        try:
            sent, summary = await self.compact.compact_input(messages)
        except RuntimeError as exc:
            if not str(exc).startswith(_INSUFFICIENT):
                raise
            first_line = str(exc).splitlines()[0]
            message = f"compaction could not shrink the conversation: {first_line}"
            raise _ContextFull(message) from exc
        if summary is not None:
            messages.append(summary)
        self.agent.usage.compactions += not _extends(self.sent, sent)
        self.sent = sent
        return sent

    def _record(self, output: ModelOutput, latency: float) -> CallRecord:
        usage = output.usage
        cached = (usage.input_tokens_cache_read or 0) if usage else 0
        written = (usage.input_tokens_cache_write or 0) if usage else 0
        calls = output.message.tool_calls or []
        return CallRecord(
            seq=self.agent.usage.calls + 1,
            window=self.surface.window,
            model=str(self.model),
            input_tokens=(usage.input_tokens + cached + written) if usage else 0,
            cached_tokens=cached,
            output_tokens=usage.output_tokens if usage else 0,
            latency_s=output.time if output.time is not None else latency,
            cost=usage.total_cost if usage else 0.0,  # None: Inspect knows no price
            finish_reason=output.stop_reason,
            tool_calls=len(calls),
            parse_errors=sum(1 for c in calls if c.parse_error),
            words=_words(output),
        )


def _words(output: ModelOutput) -> dict[str, Any]:
    """What Inspect's model said (record/words.py): its text, its reasoning parts (readable
    ones; a redacted part is kept as its summary, if any) and its tool calls."""
    message = output.message
    reasoning = []
    if not isinstance(message.content, str):
        for part in message.content:
            if isinstance(part, ContentReasoning):
                text = part.summary if part.redacted else part.reasoning
                if text:
                    reasoning.append(text)
    return {
        "content": message.text or None,
        "reasoning": "\n\n".join(reasoning) or None,
        "tool_calls": [
            {"name": call.function, "arguments": json.dumps(call.arguments, ensure_ascii=False)}
            for call in message.tool_calls or []
        ],
    }


async def _play_run(state: TaskState, life: RunLifecycle, agent: InspectDriver) -> None:
    """Every window of the run; an Inspect limit stops the model, the store idles on."""
    session = life.session
    player = _Window(state, session.surface, agent)

    async def play() -> None:
        began = time.monotonic()
        try:
            if agent.stop_reason is None:
                await player.play()
        except LimitExceededError as exc:
            agent.stop_reason = f"inspect limit: {exc.message}"
        except _ContextFull as exc:
            agent.stop_reason = f"{exc} (see the compaction task parameter)"
        finally:
            agent.usage.wall_seconds += time.monotonic() - began

    while not session.over:  # a window a limit cut short (or an idle run's) is closed for it
        await life.play_window(play)
    life.finish()


def play_store(
    scenario: Scenario,
    settings: InspectSettings,
    run_dir_of: Any,
) -> Solver:
    """The solver: play the sample's seed on `scenario`, write the run record, leave the
    outcome (run directory, metrics) in the sample store under `RESULT_KEY`.

    Args:
        scenario: The scenario to play.
        settings: The agent's settings (the model name is filled in from the eval's model).
        run_dir_of: `(seed, epoch) -> Path`, where the sample's run record goes.
    """

    @solver(name="merchantbench_store")
    def store_solver() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            seed = int(state.metadata["seed"])
            run_dir: Path = run_dir_of(seed, state.epoch)
            named = settings.model_copy(update={"model": str(get_model())})
            spec = RunSpec(INSPECT_AGENT, scenario, seed, named.model_dump())
            driver = InspectDriver(named)
            life = RunLifecycle.open(spec, run_dir, driver=driver)
            try:
                await _play_run(state, life, driver)
            except BaseException as exc:
                life.fail(exc)
                raise
            metrics = life.store_metrics()
            state.store.set(RESULT_KEY, {"run_dir": str(run_dir), "metrics": metrics})
            state.completed = True
            return state

        return solve

    return store_solver()
