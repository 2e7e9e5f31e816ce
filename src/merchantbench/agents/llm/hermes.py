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

Framework calls are traced with origin "framework" (by the ReAct loop) and do not count as
environment calls. All framework state is plain data on the agent, so it is pickled into
checkpoints and survives a resume.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import asdict, dataclass
from typing import Any

from merchantbench.agents.base import register_agent
from merchantbench.agents.llm.bridge import MODULE_NAME, ToolBridge
from merchantbench.agents.llm.react import ReActAgent
from merchantbench.agents.llm.sandbox import CodeRunner, SandboxLimits, probe_sandbox
from merchantbench.session import Session
from merchantbench.tools.errors import INVALID_ARGUMENT, failure

MEMORY_CHARS = 20_000
PLAN_CHARS = 4_000
SKILL_CHARS = 20_000
MAX_SKILLS = 50
_SKILL_NAME = re.compile(r"[a-z][a-z0-9_]{0,47}\Z")
SKILL_NAME_RULE = "up to 48 lowercase letters, digits and _, starting with a letter"

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


def _tool(tool: str, description: str, required: tuple[str, ...], /, **params: Any) -> dict:
    parameters: dict[str, Any] = {"type": "object", "properties": params}
    parameters["required"] = list(required)
    parameters["additionalProperties"] = False
    function = {"name": tool, "description": description, "parameters": parameters}
    return {"type": "function", "function": function}


def _text(description: str, enum: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "string", "description": description} | ({"enum": list(enum)} if enum else {})


KIND = _text(
    "'code' (Python) or 'steps' (prose); 'auto' decides by whether the text is Python",
    ("auto", "code", "steps"),
)
FRAMEWORK_TOOLS = [
    _tool(
        "execute_code",
        "Run a Python snippet in a sandbox. Store tools are functions of the module "
        "merchantbench_tools. Returns stdout, stderr, result (the last expression's value), "
        "truncated, tool_calls and, on failure, error {code, message}.",
        ("code",),
        code=_text("Python source"),
    ),
    _tool("memory_read", "Read your framework memory (kept for the whole run).", ()),
    _tool(
        "memory_write",
        f"Append to or replace your framework memory (at most {MEMORY_CHARS} characters).",
        ("text",),
        text=_text("what to save"),
        mode=_text(
            "'append' (default) adds a new entry; 'replace' overwrites", ("append", "replace")
        ),
    ),
    _tool("plan_read", "Read your current plan.", ()),
    _tool(
        "plan_update",
        f"Replace your plan (at most {PLAN_CHARS} characters); every window shows it.",
        ("plan",),
        plan=_text("the whole new plan"),
    ),
    _tool(
        "skill_create",
        "Save a named procedure for later windows: Python code (run by skill_use with your "
        "arguments in the dict `args`) or steps in prose.",
        ("name", "description", "code_or_steps"),
        name=_text(SKILL_NAME_RULE),
        description=_text("when to use it and what it does"),
        code_or_steps=_text("Python source, or the steps in prose"),
        kind=KIND,
    ),
    _tool(
        "skill_patch",
        "Change a skill: replace its text (code_or_steps), or replace one exact occurrence of "
        "`find` by `replace`, and/or its description.",
        ("name",),
        name=_text("the skill"),
        description=_text("new description"),
        code_or_steps=_text("new full text"),
        find=_text("exact text to replace (must occur once)"),
        replace=_text("replacement for `find`"),
        kind=KIND,
    ),
    _tool("skill_list", "List your skills: name, description, kind, version, uses.", ()),
    _tool(
        "skill_use",
        "Use a skill: code skills run like execute_code with `args` defined; steps skills "
        "return their steps for you to follow.",
        ("name",),
        name=_text("the skill"),
        args={"type": "object", "description": "arguments for the skill (JSON object)"},
    ),
]
_SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in FRAMEWORK_TOOLS}
_JSON_TYPES = {"string": str, "object": dict}


class _Refusal(Exception):
    """A framework call the model got wrong; it goes back to the model as an error."""

    def __init__(self, code: str, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.result = failure(code, message, path)


def check_args(name: str, args: Any) -> dict[str, Any]:
    """The arguments of a framework call, checked against its schema (or `_Refusal`)."""
    schema = _SCHEMAS[name]
    if not isinstance(args, dict):
        raise _Refusal(INVALID_ARGUMENT, "arguments must be a JSON object")
    allowed = schema["properties"]
    for key in args:
        if key not in allowed:
            known = ", ".join(allowed) or "none"
            raise _Refusal(INVALID_ARGUMENT, f"unknown argument {key!r}; allowed: {known}", "$")
    for key in schema["required"]:
        if key not in args:
            raise _Refusal(INVALID_ARGUMENT, f"missing argument {key!r}", f"$.{key}")
    for key, value in args.items():
        spec = allowed[key]
        if not isinstance(value, _JSON_TYPES[spec["type"]]):
            raise _Refusal(INVALID_ARGUMENT, f"{key!r} must be a {spec['type']}", f"$.{key}")
        if "enum" in spec and value not in spec["enum"]:
            raise _Refusal(INVALID_ARGUMENT, f"{key!r} must be one of {spec['enum']}", f"$.{key}")
    return args


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


def _limit(text: str, limit: int, what: str) -> str:
    if len(text) > limit:
        raise _Refusal("too_long", f"{what} would be {len(text)} characters; the limit is {limit}")
    return text


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


@register_agent("hermes")  # type: ignore[arg-type]  # acts through act_async, as ReAct
class HermesAgent(ReActAgent):
    """ReAct plus code execution, memory, a plan, skills and periodic reviews.

    Args:
        review_every: Windows between reviews of memory, plan and skills (0: never).
        unsafe_code_exec: Where no sandbox can be built, run snippets in a plain subprocess
            instead of turning `execute_code` off. Loud: a warning on stderr and a note in the
            run record's agent settings.
        code_cpu_seconds: CPU seconds of one snippet.
        code_memory_mb: Address space of one snippet's processes, in MiB.
        code_wall_seconds: Wall-clock seconds of one snippet.
        code_tool_calls: Store tool calls one snippet may make.
        **react_settings: Settings of `ReActAgent` (model, endpoint, budgets, context).
    """

    name = "hermes"
    _HANDLERS = {
        tool["function"]["name"]: f"_{tool['function']['name']}" for tool in FRAMEWORK_TOOLS
    }

    def __init__(
        self,
        review_every: int = 14,
        unsafe_code_exec: bool = False,
        code_cpu_seconds: int = 10,
        code_memory_mb: int = 1024,
        code_wall_seconds: float = 30.0,
        code_tool_calls: int = 200,
        **react_settings: Any,
    ) -> None:
        super().__init__(**react_settings)
        self.review_every = review_every
        self.unsafe_code_exec = unsafe_code_exec
        self.code_tool_calls = code_tool_calls
        limits = SandboxLimits(
            code_cpu_seconds, code_memory_mb << 20, wall_seconds=code_wall_seconds
        )
        self.runner, self.code_note = choose_runner(limits, unsafe_code_exec)
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
        return list(FRAMEWORK_TOOLS)

    def system_prompt(self, session: Session) -> str:
        guide = FRAMEWORK_GUIDE.format(review_every=self.review_every)
        if not self.review_every:
            guide = guide.rsplit("\n", 1)[0]
        if self.runner is None:
            guide += f"\n(On this machine {self.code_note}.)"
        return session.brief() + guide

    def window_prompt(self, session: Session) -> str:
        parts = [super().window_prompt(session)]
        if self.plan:
            parts.append(f"Your plan (plan_update to change it):\n{self.plan}")
        if self.skills:
            parts.append("Your skills (skill_use): " + ", ".join(sorted(self.skills)))
        return "\n\n".join(parts)

    def on_window_end(self, session: Session) -> None:
        self.windows_played += 1
        if self.review_every and self.windows_played % self.review_every == 0 and not session.over:
            self.reviews += 1
            self.inject(REVIEW_PROMPT)

    async def call_framework_tool(
        self, session: Session, name: str, args: dict[str, Any]
    ) -> dict[str, Any]:
        if name not in self._HANDLERS:
            return await super().call_framework_tool(session, name, args)
        try:
            return await getattr(self, self._HANDLERS[name])(session, check_args(name, args))
        except _Refusal as refusal:
            return refusal.result

    # --- code -------------------------------------------------------------------------------------
    async def _execute_code(self, session: Session, args: dict[str, Any]) -> dict[str, Any]:
        return await self.run_code(session, args["code"])

    async def run_code(
        self, session: Session, code: str, variables: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Run a snippet with the tools bridge; its tool calls are environment calls."""
        if self.runner is None:
            raise _Refusal("code_execution_off", self.code_note)
        bridge = ToolBridge(session, self.code_tool_calls)
        modules = {MODULE_NAME: bridge.module_source()}
        execution = await self.runner.run(code, modules, bridge, variables)
        answer = execution.to_tool_result()
        answer["tool_calls"] = bridge.calls
        if bridge.stalled:
            answer["bridge"] = "closed early: the snippet sent calls without reading the answers"
        return answer

    # --- memory and plan --------------------------------------------------------------------------
    async def _memory_read(self, session: Session, args: dict[str, Any]) -> dict[str, Any]:
        memory = self.framework_memory
        return {"ok": True, "memory": memory, "chars": len(memory), "limit": MEMORY_CHARS}

    async def _memory_write(self, session: Session, args: dict[str, Any]) -> dict[str, Any]:
        text = args["text"]
        if args.get("mode", "append") == "append" and self.framework_memory:
            text = f"{self.framework_memory}\n{text}"
        self.framework_memory = _limit(text, MEMORY_CHARS, "the memory")
        return {"ok": True, "chars": len(text), "limit": MEMORY_CHARS}

    async def _plan_read(self, session: Session, args: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "plan": self.plan}

    async def _plan_update(self, session: Session, args: dict[str, Any]) -> dict[str, Any]:
        self.plan = _limit(args["plan"], PLAN_CHARS, "the plan")
        return {"ok": True, "chars": len(self.plan), "limit": PLAN_CHARS}

    # --- skills -----------------------------------------------------------------------------------
    async def _skill_create(self, session: Session, args: dict[str, Any]) -> dict[str, Any]:
        name = args["name"]
        if not _SKILL_NAME.match(name):
            raise _Refusal(
                INVALID_ARGUMENT, f"bad skill name {name!r}: {SKILL_NAME_RULE}", "$.name"
            )
        if name in self.skills:
            raise _Refusal("skill_exists", f"a skill named {name!r} exists; use skill_patch")
        if len(self.skills) >= MAX_SKILLS:
            raise _Refusal("too_many_skills", f"at most {MAX_SKILLS} skills; patch one instead")
        body = _limit(args["code_or_steps"], SKILL_CHARS, "the skill")
        kind = skill_kind(body, args.get("kind", "auto"))
        skill = Skill(name, args["description"], kind, body, updated_window=session.window)
        self.skills[name] = skill
        return {"ok": True, "skill": skill.summary()}

    async def _skill_patch(self, session: Session, args: dict[str, Any]) -> dict[str, Any]:
        skill = self._skill(args["name"])
        if len(args) == 1:
            raise _Refusal(INVALID_ARGUMENT, "nothing to change: give code_or_steps, find and "
                           "replace, description or kind")  # fmt: skip
        body = args.get("code_or_steps", skill.body)
        if ("find" in args) != ("replace" in args):
            raise _Refusal(INVALID_ARGUMENT, "`find` and `replace` go together")
        if "find" in args:
            count = body.count(args["find"])
            if count != 1:
                raise _Refusal("patch_mismatch", f"`find` occurs {count} times; it must occur once")
            body = body.replace(args["find"], args["replace"])
        skill.body = _limit(body, SKILL_CHARS, "the skill")
        skill.description = args.get("description", skill.description)
        skill.kind = skill_kind(body, args["kind"]) if "kind" in args else skill.kind
        skill.version += 1
        skill.updated_window = session.window
        return {"ok": True, "skill": skill.summary()}

    async def _skill_list(self, session: Session, args: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "skills": [self.skills[n].summary() for n in sorted(self.skills)]}

    async def _skill_use(self, session: Session, args: dict[str, Any]) -> dict[str, Any]:
        skill = self._skill(args["name"])
        skill.uses += 1
        skill_args = args.get("args", {})
        if skill.kind == "steps":
            return {"ok": True, "skill": skill.name, "steps": skill.body, "args": skill_args}
        answer = await self.run_code(session, skill.body, {"args": skill_args})
        return {"skill": skill.name, **answer}

    def _skill(self, name: str) -> Skill:
        if name not in self.skills:
            known = ", ".join(sorted(self.skills)) or "none yet"
            raise _Refusal("unknown_skill", f"no skill named {name!r}; your skills: {known}")
        return self.skills[name]
