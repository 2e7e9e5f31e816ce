"""The Hermes harness's own tools, declared with `@tool` like the store's, as framework tools.

`FRAMEWORK_TOOLS` is their registry: the schemas the model is offered after the environment
tools, the argument validation and the descriptions all come from these declarations, and
`FRAMEWORK_TOOLS.call_async(HermesCall(agent, session), name, args)` runs one. A call the model
gets wrong (a missing or unknown argument, a wrong type, a value outside an enum) is refused
with `invalid_argument` by the shared mechanism; a text over its limit, an unknown skill and the
like are refused by the tool with `ToolError`. The limits are `LIMITS`, which the descriptions
state. The harness records each call as a framework call; none is an environment call, though
code run by `execute_code` and `skill_use` calls environment tools through the bridge.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import JsonValue

from merchantbench.refusals import Refusal
from merchantbench.tools.declare import FrameworkGroup, Tool, ToolKind
from merchantbench.tools.errors import ToolError
from merchantbench.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from merchantbench.agents.llm.hermes import HermesAgent
    from merchantbench.surface import AgentSurface


@dataclass(frozen=True)
class HermesLimits:
    """Sizes the framework tools allow; their descriptions state them (`{memory_chars}`)."""

    memory_chars: int = 20_000
    plan_chars: int = 4_000
    skill_chars: int = 20_000
    max_skills: int = 50
    skill_name_chars: int = 48


LIMITS = HermesLimits()
SKILL_NAME_RULE = (
    f"up to {LIMITS.skill_name_chars} lowercase letters, digits and _, starting with a letter"
)
_SKILL_NAME = re.compile(rf"[a-z][a-z0-9_]{{0,{LIMITS.skill_name_chars - 1}}}\Z")

SkillKind = Literal["auto", "code", "steps"]
FRAMEWORK_TOOLS = ToolRegistry()


def framework_tool(kind: ToolKind, group: FrameworkGroup) -> Callable[[Callable[..., Any]], Tool]:
    """Declare a framework tool of the harness and register it in `FRAMEWORK_TOOLS`."""
    return FRAMEWORK_TOOLS.tool(kind=kind, group=group, role="framework", renders_from=LIMITS)


@dataclass(frozen=True)
class HermesCall:
    """What a framework tool acts on: the harness (its memory, plan, skills, code runner) and
    the run's session (its clock, and the tools code may call)."""

    agent: HermesAgent
    session: AgentSurface


@dataclass
class Skill:
    """A named procedure the model keeps: Python code or steps in prose."""

    name: str
    description: str
    kind: str  # "code" or "steps"
    body: str
    version: int = 1
    uses: int = 0
    updated_window: int = 0

    def summary(self) -> dict[str, Any]:
        fields = asdict(self)
        del fields["body"]
        return fields


class SnippetFailed(ToolError):
    """A snippet ran and failed (it raised, timed out, ran out of memory …); the answer still
    carries what it printed and how many tool calls it made."""

    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__(answer["error"]["code"], answer["error"]["message"])
        self.answer = answer

    def to_result(self) -> dict[str, Any]:
        return {"ok": False, **self.answer}


def check_length(text: str, limit: int, what: str) -> str:
    """The text, if it fits its limit (else `ToolError`)."""
    if len(text) > limit:
        raise ToolError(
            Refusal.TOO_LONG, f"{what} would be {len(text)} characters; the limit is {limit}"
        )
    return text


def check_skill_name(name: str) -> str:
    """The name, if it is a valid skill name (else `ToolError`)."""
    if not _SKILL_NAME.match(name):
        raise ToolError(
            Refusal.INVALID_ARGUMENT, f"bad skill name {name!r}: {SKILL_NAME_RULE}", "$.name"
        )
    return name


def skill_kind(text: str, kind: str = "auto") -> str:
    """'code' or 'steps'. Auto: Python that parses and does something (a call, an assignment,
    an import) is code; prose never parses as such."""
    if kind != "auto":
        return kind
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return "steps"
    actions = (ast.Call, ast.Assign, ast.AugAssign, ast.Import, ast.ImportFrom)
    return "code" if any(isinstance(node, actions) for node in ast.walk(tree)) else "steps"


def _skill(ctx: HermesCall, name: str) -> Skill:
    skills = ctx.agent.skills
    if name not in skills:
        known = ", ".join(sorted(skills)) or "none yet"
        raise ToolError(Refusal.UNKNOWN_SKILL, f"no skill named {name!r}; your skills: {known}")
    return skills[name]


# --- code --------------------------------------------------------------------------------------
@framework_tool("write", "code")
async def execute_code(ctx: HermesCall, code: str) -> dict[str, Any]:
    """Run a Python snippet in a sandbox.

    Store tools are functions of the module merchantbench_tools. Returns stdout, stderr, result
    (the last expression's value), truncated, tool_calls and, on failure, error {code, message}.

    Args:
        code: Python source.
    """
    return await ctx.agent.run_code(ctx.session, code)


# --- memory and plan ---------------------------------------------------------------------------
@framework_tool("read", "memory")
def memory_read(ctx: HermesCall) -> dict[str, Any]:
    """Read your framework memory (kept for the whole run)."""
    memory = ctx.agent.framework_memory
    return {"memory": memory, "chars": len(memory), "limit": LIMITS.memory_chars}


@framework_tool("write", "memory")
def memory_write(
    ctx: HermesCall, text: str, mode: Literal["append", "replace"] = "append"
) -> dict[str, Any]:
    """Append to or replace your framework memory (at most {memory_chars} characters).

    Args:
        text: What to save.
        mode: 'append' (default) adds a new entry; 'replace' overwrites.
    """
    agent = ctx.agent
    if mode == "append" and agent.framework_memory:
        text = f"{agent.framework_memory}\n{text}"
    agent.framework_memory = check_length(text, LIMITS.memory_chars, "the memory")
    return {"chars": len(text), "limit": LIMITS.memory_chars}


@framework_tool("read", "plan")
def plan_read(ctx: HermesCall) -> dict[str, Any]:
    """Read your current plan."""
    return {"plan": ctx.agent.plan}


@framework_tool("write", "plan")
def plan_update(ctx: HermesCall, plan: str) -> dict[str, Any]:
    """Replace your plan (at most {plan_chars} characters); every window shows it.

    Args:
        plan: The whole new plan.
    """
    ctx.agent.plan = check_length(plan, LIMITS.plan_chars, "the plan")
    return {"chars": len(plan), "limit": LIMITS.plan_chars}


# --- skills ------------------------------------------------------------------------------------
@framework_tool("write", "skills")
def skill_create(
    ctx: HermesCall, name: str, description: str, code_or_steps: str, kind: SkillKind = "auto"
) -> dict[str, Any]:
    """Save a named procedure for later windows.

    Python code (run by skill_use with your arguments in the dict `args`) or steps in prose;
    at most {max_skills} skills of {skill_chars} characters each.

    Args:
        name: Up to {skill_name_chars} lowercase letters, digits and _, starting with a letter.
        description: When to use it and what it does.
        code_or_steps: Python source, or the steps in prose.
        kind: 'code' (Python) or 'steps' (prose); 'auto' decides by whether the text is Python.
    """
    skills = ctx.agent.skills
    check_skill_name(name)
    if name in skills:
        raise ToolError(Refusal.SKILL_EXISTS, f"a skill named {name!r} exists; use skill_patch")
    if len(skills) >= LIMITS.max_skills:
        raise ToolError(
            Refusal.TOO_MANY_SKILLS, f"at most {LIMITS.max_skills} skills; patch one instead"
        )
    body = check_length(code_or_steps, LIMITS.skill_chars, "the skill")
    window = ctx.session.window
    skill = Skill(name, description, skill_kind(body, kind), body, updated_window=window)
    skills[name] = skill
    return {"skill": skill.summary()}


@framework_tool("write", "skills")
def skill_patch(
    ctx: HermesCall,
    name: str,
    description: str | None = None,
    code_or_steps: str | None = None,
    find: str | None = None,
    replace: str | None = None,
    kind: SkillKind | None = None,
) -> dict[str, Any]:
    """Change a skill: its text, one exact part of it, its description or its kind.

    Replace its text (code_or_steps), or replace one exact occurrence of `find` by `replace`,
    and/or its description.

    Args:
        name: The skill.
        description: New description.
        code_or_steps: New full text.
        find: Exact text to replace (must occur once).
        replace: Replacement for `find`.
        kind: 'code' (Python) or 'steps' (prose); 'auto' decides by whether the text is Python.
    """
    skill = _skill(ctx, name)
    if all(value is None for value in (description, code_or_steps, find, replace, kind)):
        message = "nothing to change: give code_or_steps, find and replace, description or kind"
        raise ToolError(Refusal.INVALID_ARGUMENT, message)
    body = skill.body if code_or_steps is None else code_or_steps
    if find is not None and replace is not None:
        count = body.count(find)
        if count != 1:
            raise ToolError(
                Refusal.PATCH_MISMATCH, f"`find` occurs {count} times; it must occur once"
            )
        body = body.replace(find, replace)
    elif find is not None or replace is not None:
        raise ToolError(Refusal.INVALID_ARGUMENT, "`find` and `replace` go together")
    skill.body = check_length(body, LIMITS.skill_chars, "the skill")
    skill.description = skill.description if description is None else description
    if kind is not None:
        skill.kind = skill_kind(body, kind)
    skill.version += 1
    skill.updated_window = ctx.session.window
    return {"skill": skill.summary()}


@framework_tool("read", "skills")
def skill_list(ctx: HermesCall) -> dict[str, Any]:
    """List your skills: name, description, kind, version, uses."""
    skills = ctx.agent.skills
    return {"skills": [skills[name].summary() for name in sorted(skills)]}


@framework_tool("write", "skills")
async def skill_use(
    ctx: HermesCall, name: str, args: dict[str, JsonValue] | None = None
) -> dict[str, Any]:
    """Use a skill.

    Code skills run like execute_code with `args` defined; steps skills return their steps for
    you to follow.

    Args:
        name: The skill.
        args: Arguments for the skill (a JSON object).
    """
    skill = _skill(ctx, name)
    skill.uses += 1
    skill_args = {} if args is None else args
    if skill.kind == "steps":
        return {"skill": skill.name, "steps": skill.body, "args": skill_args}
    try:
        answer = await ctx.agent.run_code(ctx.session, skill.body, {"args": skill_args})
    except SnippetFailed as failed:
        failed.answer = {"skill": skill.name, **failed.answer}
        raise
    return {"skill": skill.name, **answer}
