"""The Hermes harness's own tools as the model sees them: schemas, size limits, argument checks.

The schemas are OpenAI function-calling tools, offered after the environment tools. A call the
model gets wrong (a missing or unknown argument, a wrong type, a value outside an enum, a text
over its limit) raises `ToolError`, which the harness returns to the model as a refusal.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from merchantbench.tools.errors import INVALID_ARGUMENT, ToolError

MEMORY_CHARS = 20_000
PLAN_CHARS = 4_000
SKILL_CHARS = 20_000
MAX_SKILLS = 50
SKILL_NAME_RULE = "up to 48 lowercase letters, digits and _, starting with a letter"
_SKILL_NAME = re.compile(r"[a-z][a-z0-9_]{0,47}\Z")


def _tool(tool: str, description: str, required: tuple[str, ...], /, **params: Any) -> dict:
    parameters = {
        "type": "object",
        "properties": params,
        "required": list(required),
        "additionalProperties": False,
    }
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
FRAMEWORK_TOOL_NAMES = frozenset(_SCHEMAS)
_JSON_TYPES = {"string": str, "object": dict}


def check_args(name: str, args: Any) -> dict[str, Any]:
    """The arguments of a framework call, checked against its schema (or `ToolError`)."""
    schema = _SCHEMAS[name]
    if not isinstance(args, dict):
        raise ToolError(INVALID_ARGUMENT, "arguments must be a JSON object")
    allowed = schema["properties"]
    for key in args:
        if key not in allowed:
            known = ", ".join(allowed) or "none"
            raise ToolError(INVALID_ARGUMENT, f"unknown argument {key!r}; allowed: {known}", "$")
    for key in schema["required"]:
        if key not in args:
            raise ToolError(INVALID_ARGUMENT, f"missing argument {key!r}", f"$.{key}")
    for key, value in args.items():
        spec = allowed[key]
        if not isinstance(value, _JSON_TYPES[spec["type"]]):
            raise ToolError(INVALID_ARGUMENT, f"{key!r} must be a {spec['type']}", f"$.{key}")
        if "enum" in spec and value not in spec["enum"]:
            raise ToolError(INVALID_ARGUMENT, f"{key!r} must be one of {spec['enum']}", f"$.{key}")
    return args


def check_length(text: str, limit: int, what: str) -> str:
    """The text, if it fits its limit (else `ToolError`)."""
    if len(text) > limit:
        raise ToolError("too_long", f"{what} would be {len(text)} characters; the limit is {limit}")
    return text


def check_skill_name(name: str) -> str:
    """The name, if it is a valid skill name (else `ToolError`)."""
    if not _SKILL_NAME.match(name):
        raise ToolError(INVALID_ARGUMENT, f"bad skill name {name!r}: {SKILL_NAME_RULE}", "$.name")
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
