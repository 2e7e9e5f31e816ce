"""The Hermes-style harness: ReAct plus the framework's own tools.

Besides the environment tools the model gets:

- `execute_code`: Python run in the OS sandbox (`sandbox.py`); the snippet calls environment
  tools through `merchantbench_tools` (`bridge.py`), and those calls are environment calls.
- a persistent memory (`memory_read`, `memory_write`), separate from the store's
  `write_memory_doc`;
- a plan (`plan_read`, `plan_update`), shown under every window's observation;
- skills (`skill_create`, `skill_patch`, `skill_list`, `skill_use`): named procedures kept for
  the whole run, either Python (run through `execute_code` with `args` defined) or steps in
  prose (returned for the model to follow);
- a periodic review: every `review_every` windows the model is asked to update its memory, plan
  and skills.

The tools are declared in `hermes_tools.py` with `@tool`, like the store's, as framework tools:
their schemas, argument validation and descriptions (which state their size limits) come from
those declarations, and a call the model gets wrong goes back to it as a structured refusal.
Framework calls are traced with origin "framework" (by the ReAct loop) and do not count as
environment calls. All framework state is plain data on the agent, so it is pickled into
checkpoints and survives a resume.
"""

from __future__ import annotations

import sys
from typing import Any

from pydantic import Field

from merchantbench.agents.llm.bridge import MODULE_NAME, ToolBridge
from merchantbench.agents.llm.hermes_tools import (
    FRAMEWORK_TOOLS,
    HermesCall,
    Skill,
    SnippetFailed,
)
from merchantbench.agents.llm.react import ReActAgent, ReActSettings
from merchantbench.agents.llm.sandbox import CodeRunner, SandboxLimits, probe_sandbox
from merchantbench.refusals import Refusal
from merchantbench.surface import AgentSurface
from merchantbench.tools.errors import ToolError

REVIEW_PROMPT = (
    "Review time. Before you continue, look back over the last windows: save durable facts and "
    "lessons with memory_write, bring your plan up to date with plan_update, and turn any "
    "procedure you repeated into a skill (skill_create) or fix one that misbehaved "
    "(skill_patch). Then carry on with this window."
)
FRAMEWORK_GUIDE = """

## Your framework tools

Besides the store's tools you have tools of your own; they do not count as store tool calls.
- execute_code(code): run Python (no network, a private scratch directory, limited time and
  memory). `import merchantbench_tools as mt`, then call any store tool as a function, e.g.
  `mt.search_products(query="gel pen")` or `mt.call("query_balance")`; each returns the tool's
  answer as a dict and counts as a store tool call of this window. end_of_step is not callable
  from code. The value of the last expression is returned as `result`; print() goes to stdout.
  Files written to /scratch last only until the snippet ends.
- memory_read / memory_write: your own notes, kept for the whole run.
- plan_read / plan_update: your current plan; it is shown with every window's observation.
- skill_create / skill_patch / skill_list / skill_use: named procedures you keep for the whole
  run, either Python code (run like execute_code, with your arguments in the dict `args`) or
  steps written in prose (returned for you to follow).
Every {review_every} windows you will be asked to review your memory, plan and skills."""


def choose_runner(limits: SandboxLimits, unsafe: bool) -> tuple[CodeRunner | None, str]:
    """The code runner for this machine and a note on why; None when code execution is off."""
    available, reason = probe_sandbox()
    if available:
        return CodeRunner("sandbox", limits), reason
    if not unsafe:
        print(f"NOTE (hermes): execute_code is off: {reason}", file=sys.stderr)
        return None, f"execute_code is off: {reason}"
    note = f"UNSAFE: snippets run in a plain subprocess without isolation ({reason})"
    print(f"WARNING (hermes): {note}", file=sys.stderr)
    return CodeRunner("unsafe", limits), note


class HermesSettings(ReActSettings):
    """Settings of the Hermes-style harness: ReAct's, and

    Attributes:
        review_every: Windows between reviews of memory, plan and skills (0: never).
        unsafe_code_exec: Where no sandbox can be built, run snippets in a plain subprocess
            instead of turning `execute_code` off. Loud: a warning on stderr and a note in the
            run record's agent settings.
        code_cpu_seconds: CPU seconds of one snippet.
        code_memory_mb: Address space of one snippet's processes, in MiB.
        code_wall_seconds: Wall-clock seconds of one snippet.
        code_tool_calls: Store tool calls one snippet may make.
    """

    review_every: int = Field(default=14, ge=0)
    unsafe_code_exec: bool = False
    code_cpu_seconds: int = Field(default=10, ge=1)
    code_memory_mb: int = Field(default=1024, ge=64)
    code_wall_seconds: float = Field(default=30.0, gt=0)
    code_tool_calls: int = Field(default=200, ge=0)


class HermesAgent(ReActAgent):
    """ReAct plus code execution, memory, a plan, skills and periodic reviews (settings:
    `HermesSettings`)."""

    name = "hermes"
    Settings = HermesSettings

    def __init__(self, config: HermesSettings | None = None) -> None:
        config = config if config is not None else HermesSettings()
        super().__init__(config)
        self.review_every = config.review_every
        self.unsafe_code_exec = config.unsafe_code_exec
        self.code_tool_calls = config.code_tool_calls
        limits = SandboxLimits(
            config.code_cpu_seconds,
            config.code_memory_mb << 20,
            wall_seconds=config.code_wall_seconds,
        )
        self.runner, self.code_note = choose_runner(limits, config.unsafe_code_exec)
        self.framework_memory = ""
        self.plan = ""
        self.skills: dict[str, Skill] = {}
        self.windows_played = 0
        self.reviews = 0

    def settings(self) -> dict[str, Any]:
        code: dict[str, Any] = {"mode": "off"}
        if self.runner is not None:
            code = self.runner.settings()
        code.update(note=self.code_note, unsafe_code_exec=self.unsafe_code_exec)
        code["tool_calls_per_snippet"] = self.code_tool_calls
        hermes = {"framework": "hermes", "review_every": self.review_every, "code_execution": code}
        return {**super().settings(), **hermes}

    # --- ReAct hooks ------------------------------------------------------------------------------
    def framework_tool_schemas(self) -> list[dict[str, Any]]:
        return FRAMEWORK_TOOLS.schema_list()

    def system_prompt(self, session: AgentSurface) -> str:
        guide = FRAMEWORK_GUIDE.format(review_every=self.review_every)
        if not self.review_every:
            guide = guide.rsplit("\n", 1)[0]
        if self.runner is None:
            guide += f"\n(On this machine {self.code_note}.)"
        return session.brief() + guide

    def window_prompt(self, session: AgentSurface) -> str:
        parts = [super().window_prompt(session)]
        if self.plan:
            parts.append(f"Your plan (plan_update to change it):\n{self.plan}")
        if self.skills:
            parts.append("Your skills (skill_use): " + ", ".join(sorted(self.skills)))
        return "\n\n".join(parts)

    def on_window_end(self, session: AgentSurface) -> None:
        self.windows_played += 1
        if self.review_every and self.windows_played % self.review_every == 0 and not session.over:
            self.reviews += 1
            self.inject(REVIEW_PROMPT)

    async def call_framework_tool(
        self, session: AgentSurface, name: str, args: dict[str, Any]
    ) -> dict[str, Any]:
        return await FRAMEWORK_TOOLS.call_async(HermesCall(self, session), name, args)

    async def run_code(
        self, session: AgentSurface, code: str, variables: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Run a snippet with the tools bridge; its tool calls are environment calls.

        Returns:
            stdout, stderr, result, truncated and tool_calls (and `bridge` if the snippet
            stalled it).

        Raises:
            ToolError: Code execution is off on this machine.
            SnippetFailed: The snippet failed; the error carries the same fields.
        """
        if self.runner is None:
            raise ToolError(Refusal.CODE_EXECUTION_OFF, self.code_note)
        bridge = ToolBridge(session, self.code_tool_calls)
        modules = {MODULE_NAME: bridge.module_source()}
        execution = await self.runner.run(code, modules, bridge, variables)
        answer = execution.to_tool_result()
        answer["tool_calls"] = bridge.calls
        if bridge.stalled:
            answer["bridge"] = "closed early: the snippet sent calls without reading the answers"
        if not answer.pop("ok"):
            raise SnippetFailed(answer)
        return answer
