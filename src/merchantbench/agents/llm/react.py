"""ReAct: an LLM runs the store through the environment tools, one window at a time.

Per window: the observation becomes a user turn, then up to `max_model_calls` model calls whose
tool calls run through the session; `end_of_step` ends the window. When the model stops calling
tools, fails (after retries) or runs out of calls, the harness forces `end_of_step` (recorded as
forced). System prompt (the brief) and tool list never change and messages are only appended
(until a trim), so provider prompt caching works. User guide: docs/llm.md.

Extension hooks (the Hermes-style harness subclasses this class):

- `framework_tool_schemas() -> list[dict]`: extra tools offered to the model, in OpenAI
  function-calling format, after the environment tools. Default `[]`. Must return the same list
  on every call of a run (prompt caching, and the model's view of its tools).
- `async call_framework_tool(surface, name, args) -> dict`: run one of those tools. `args` is
  the decoded JSON object. Return a JSON-able dict (`{"ok": true, ...}` or
  `{"ok": false, "error": {"code", "message"}}`); it goes back to the model as the tool message.
  The harness traces it with `surface.record_framework_call` (origin "framework"), so
  implementations must not record it again. Environment calls made *inside* a framework tool
  (e.g. a code bridge) go through `surface.call` and count as environment calls. Default: an
  `unknown_tool` error.
- `system_prompt(surface) -> str`: the system message. Default `surface.brief()`.
- `window_prompt(surface) -> str`: the user turn that opens a window. Default: a note if the
  previous window was force-closed, then `surface.observation()`.
- `on_window_end(surface) -> None`: called after every window this agent played (also after a
  forced close), before the runner checkpoints; e.g. to schedule a periodic review.
- `inject(text)`: queue a user message; queued messages are sent right after the next window
  prompt (call it from `on_window_end`), or before the next model call if called mid-window.
- `conversation`: the `Conversation` (messages, token estimate, compaction); picklable.

State lives in plain attributes so the agent pickles into checkpoints; `__getstate__` drops the
HTTP client (rebuilt on first use; subclasses with unpicklable objects must do the same). The
API key is never stored on the agent: it is read from the environment when the client is built.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict
from typing import Any, ClassVar

from pydantic import Field

from merchantbench.agents.base import AgentOutcome, AgentSettings, BaseAgent
from merchantbench.agents.llm.client import ClientOptions, ModelCallFailed, ModelClient
from merchantbench.agents.llm.conversation import Conversation, ToolCall, parse_tool_calls
from merchantbench.agents.llm.models import ModelConfig, resolve_model
from merchantbench.agents.llm.usage import Budget, CallRecord, UsageTotals
from merchantbench.refusals import Refusal
from merchantbench.surface import AgentSurface
from merchantbench.tools.agent_input import scrub
from merchantbench.tools.errors import failure, unknown_tool

_FORCED_NOTES = {
    "no_tool_calls": "you replied without calling a tool",
    "model_error": "the model could not be reached",
    "call_limit": "you used all your model calls for the window",
    "budget": "the run's budget is spent",
}


class ReActSettings(AgentSettings):
    """Settings of the ReAct harness.

    Attributes:
        model: Model id sent in requests (or taken from the models file entry).
        base_url: Endpoint, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`.
        api_key_env: Environment variable holding the key (never the key itself).
        models_file: TOML or YAML file of named model entries.
        model_entry: Entry of `models_file` to use.
        max_model_calls: Model calls per window before `end_of_step` is forced.
        compact_at_tokens: Prompt size that triggers the save-notes reminder and trimming.
        keep_tokens: Newest tokens kept when trimming.
        max_tokens, max_cost, max_wall_seconds: Run budget (None: no limit) in tokens (input
            + output), in the models file's currency, and in seconds of the agent's windows.
        max_retries, retry_base_seconds, request_timeout: See `ClientOptions`.
        max_failed_windows: Windows in a row whose model call failed for good before the run
            stops with an error (resumable from its checkpoint).
        params: Extra request parameters (e.g. `{"reasoning_effort": "high"}`), merged over
            the models file's.
    """

    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    models_file: str | None = None
    model_entry: str | None = None
    max_model_calls: int = Field(default=30, ge=1)
    compact_at_tokens: int = Field(default=160_000, ge=1)
    keep_tokens: int = Field(default=30_000, ge=1)
    max_tokens: int | None = Field(default=None, ge=0)
    max_cost: float | None = Field(default=None, ge=0)
    max_wall_seconds: float | None = Field(default=None, ge=0)
    max_retries: int = Field(default=6, ge=0)
    retry_base_seconds: float = Field(default=1.0, ge=0)
    request_timeout: float = Field(default=600.0, gt=0)
    max_failed_windows: int = Field(default=3, ge=1)
    params: dict[str, Any] | None = None


class ReActAgent(BaseAgent[ReActSettings]):
    """The ReAct harness over any OpenAI-compatible chat-completions endpoint (settings:
    `ReActSettings`)."""

    name = "react"
    Settings: ClassVar[type[AgentSettings]] = ReActSettings

    def __init__(self, config: ReActSettings | None = None) -> None:
        super().__init__(config)
        c = self.config
        self.model: ModelConfig = resolve_model(
            c.model, c.base_url, c.api_key_env, c.models_file, c.model_entry, c.params
        )
        self.model.api_key()  # fail now, not at the first window, if the key is missing
        self.max_model_calls = c.max_model_calls
        self.budget = Budget(c.max_tokens, c.max_cost, c.max_wall_seconds)
        if c.max_cost is not None:
            self.model.require_prices("--max-cost")  # a budget on an unknown cost: refused
        self.client_options = ClientOptions(
            max_retries=c.max_retries,
            retry_base_seconds=c.retry_base_seconds,
            request_timeout=c.request_timeout,
        )
        self.conversation = Conversation(c.compact_at_tokens, c.keep_tokens)
        self.usage = UsageTotals()
        self.stop_reason: str | None = None
        self._pending_records: list[dict[str, Any]] = []
        self._queued: list[str] = []
        self._forced_note: str | None = None
        self._client: ModelClient | None = None
        self.max_failed_windows = c.max_failed_windows
        self._tools: list[dict[str, Any]] = []
        self._tool_names: frozenset[str] = frozenset()
        self._framework_names: frozenset[str] = frozenset()
        self._failed_windows = 0

    # --- hooks ------------------------------------------------------------------------------------
    def framework_tool_schemas(self) -> list[dict[str, Any]]:
        """Tools of the harness itself, offered after the environment tools (none here)."""
        return []

    async def call_framework_tool(
        self, surface: AgentSurface, name: str, args: dict[str, Any]
    ) -> dict[str, Any]:
        """Run one framework tool; the harness traces it. ReAct has none."""
        return unknown_tool(name, sorted(self._framework_names))

    def system_prompt(self, surface: AgentSurface) -> str:
        return surface.brief()

    def window_prompt(self, surface: AgentSurface) -> str:
        if self._forced_note is None:
            return surface.observation()
        return (
            f"(The previous window was closed for you because {self._forced_note}. Call "
            f"end_of_step yourself when you are done.)\n\n{surface.observation()}"
        )

    def on_window_end(self, surface: AgentSurface) -> None:
        """Called after each window this agent played, before the runner checkpoints."""

    def inject(self, text: str) -> None:
        """Queue a user message for the model (sent after the next window prompt or turn)."""
        self._queued.append(text)

    # --- what the runner uses ---------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        return {
            **self.model.public_settings(),
            "max_model_calls": self.max_model_calls,
            "compact_at_tokens": self.conversation.compact_at_tokens,
            "keep_tokens": self.conversation.keep_tokens,
            "budget": self.budget.as_json(),
            **asdict(self.client_options),
            "max_failed_windows": self.max_failed_windows,
        }

    @property
    def model_calls_seq(self) -> int:
        """Model calls made so far; `model_calls.jsonl` lines past it are dropped on resume."""
        return self.usage.calls

    def drain_model_calls(self) -> list[dict[str, Any]]:
        """Records of model calls not yet written; the runner appends them to the run dir."""
        records, self._pending_records = self._pending_records, []
        return records

    def outcome(self) -> AgentOutcome:
        """Usage totals (run.json's `llm_usage`) and the budget that stopped it, if any."""
        return AgentOutcome(usage=self.usage.as_json(), stop_reason=self.stop_reason)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_client"] = None  # sockets do not pickle; rebuilt (key re-read) on first use
        return state

    # --- one window -------------------------------------------------------------------------------
    def act(self, surface: AgentSurface) -> None:
        """Blocking form, for callers without an event loop; each call opens its own client."""

        async def one_window() -> None:
            try:
                await self.act_async(surface)
            finally:
                await self.aclose()  # the client belongs to this call's event loop

        asyncio.run(one_window())

    async def act_async(self, surface: AgentSurface) -> None:
        began = time.monotonic()
        try:
            await self._play_window(surface, began)
        finally:
            self.usage.wall_seconds += time.monotonic() - began
        self.on_window_end(surface)

    async def _play_window(self, surface: AgentSurface, began: float) -> None:
        window = surface.window
        if self._spent(began):
            return  # the runner closes the remaining windows: the run idles to its end
        if not self.conversation.started:
            self._start(surface)
        self.conversation.add_user(self.window_prompt(surface))
        self._forced_note = None
        reason = "call_limit"
        for _ in range(self.max_model_calls):
            self._send_queued()
            if self._spent(began):
                reason = "budget"
                break
            self.usage.compactions += self.conversation.manage_context()
            calls = await self._call_model(surface)
            if calls is None:
                reason = "model_error"
                break
            if not calls:
                reason = "no_tool_calls"
                break
            await self._run_tool_calls(surface, calls, window)
            if surface.window_done(window):
                self._failed_windows = 0
                return
        self._force(surface, window, reason)

    def _start(self, surface: AgentSurface) -> None:
        framework = self.framework_tool_schemas()
        # Fixed for the whole run: the tool list is part of the cached prompt prefix.
        self._tools = [*surface.tool_schemas(), *framework]
        self._tool_names = frozenset(t["function"]["name"] for t in self._tools)
        self._framework_names = frozenset(t["function"]["name"] for t in framework)
        self.conversation.start(self.system_prompt(surface), self._tools)

    def _spent(self, began: float) -> bool:
        if self.stop_reason is None:
            wall = self.usage.wall_seconds + time.monotonic() - began
            self.stop_reason = self.budget.exceeded(self.usage, wall)
        return self.stop_reason is not None

    def _send_queued(self) -> None:
        for text in self._queued:
            self.conversation.add_user(text)
        self._queued = []

    async def _call_model(self, surface: AgentSurface) -> list[ToolCall] | None:
        """One model call, recorded; its parsed tool calls, or None if it failed for good."""
        if self._client is None:
            self._client = ModelClient(self.model, self.client_options)
        seq = self.usage.calls + 1
        try:
            answer = await self._client.complete(self.conversation.messages, self._tools)
        except ModelCallFailed as exc:
            self._record(exc.record(seq, surface.window, self.model.model))
            return None
        calls = parse_tool_calls(answer.message, self._tool_names)
        # What the model sent is kept as it can be sent again (lone surrogates replaced).
        self.conversation.append(scrub(answer.message))
        self._record(answer.record(seq, surface.window, self.model, calls))
        return calls

    def _record(self, record: CallRecord) -> None:
        self.usage.add(record)
        self._pending_records.append(record.as_json())

    async def _run_tool_calls(
        self, surface: AgentSurface, calls: list[ToolCall], window: int
    ) -> None:
        """Answer every call (the API requires it), but run none after the window closed."""
        for call in calls:
            if surface.window_done(window):
                result = failure(Refusal.WINDOW_CLOSED, "end_of_step closed the window; not run")
            elif call.error is not None:
                result = call.error
            elif call.name in self._framework_names:
                result = await self.call_framework_tool(surface, call.name, call.args or {})
                ok = bool(result.get("ok", False))
                code = None if ok else (result.get("error") or {}).get("code", "error")
                surface.record_framework_call(call.name, call.args, ok, code)
            else:
                result = surface.call(call.name, call.args)
            self.conversation.add_tool_result(call.call_id, result)

    def _force(self, surface: AgentSurface, window: int, reason: str) -> None:
        self._failed_windows = self._failed_windows + 1 if reason == "model_error" else 0
        if self._failed_windows >= self.max_failed_windows:
            # A provider that is down stays down for a while: stop with an error (run.json says
            # so) rather than idle through the year; `--resume` continues from the checkpoint.
            raise ModelCallFailed(f"the model failed in {self._failed_windows} windows in a row")
        self.usage.forced_windows += 1
        self._forced_note = _FORCED_NOTES[reason]
        if not surface.window_done(window):
            surface.force_end_of_step()
