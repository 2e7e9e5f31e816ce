"""The tables of docs/tools.md that are generated from declarations, never written by hand:
the index of the tools (from `toolset.DECLARED`) and the refusal codes (from
`merchantbench.refusals.Refusal`).

A generated table sits between two marker lines in the Markdown file:

    <!-- generated: tool-index -->
    | tool | group | kind | summary |
    ...
    <!-- end generated -->

`update_generated(text)` rewrites every such block from the current declarations; `merchantbench
tools docs docs/tools.md --write` applies it, and a test checks that the file is up to date.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from merchantbench.refusals import Refusal
from merchantbench.tools.toolset import DECLARED

_BLOCK = re.compile(
    r"(?P<open><!-- generated: (?P<name>[a-z-]+) -->\n)(?P<body>.*?)"
    r"(?P<close><!-- end generated -->)",
    re.DOTALL,
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def tool_index() -> str:
    """Every declared environment tool in declaration order, with its group, kind and summary;
    optional tools are marked with the scenario switch that turns them on."""
    tools = DECLARED.tools(include_optional=True)
    core = [t for t in tools if not t.optional]
    optional = [t for t in tools if t.optional]
    lines = [
        f"{len(core)} core tools, offered in every scenario, and {len(optional)} optional tools, "
        "each switched on by the scenario setting of its name:",
        "",
        "| tool | group | kind | summary |",
        "|---|---|---|---|",
    ]
    for t in tools:
        switch = f" *(optional: `tools.{t.name}`)*" if t.optional else ""
        lines.append(f"| `{t.name}` | {t.group} | {t.kind} | {_cell(t.summary)}{switch} |")
    return "\n".join(lines) + "\n"


def refusal_codes() -> str:
    """Every refusal code with where it comes from and when it is answered."""
    lines = ["| code | from | when |", "|---|---|---|"]
    lines += [f"| `{code}` | {code.source} | {_cell(code.meaning)} |" for code in Refusal]
    return "\n".join(lines) + "\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "tool-index": tool_index,
    "refusal-codes": refusal_codes,
}


class GeneratedBlockError(ValueError):
    """A marker names no known table."""


def update_generated(text: str) -> str:
    """`text` with every generated block rewritten from the declarations.

    Raises:
        GeneratedBlockError: a block names a table that is not generated.
    """

    def rewrite(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in GENERATORS:
            raise GeneratedBlockError(f"no generated table named {name!r}")
        return match.group("open") + GENERATORS[name]() + match.group("close")

    return _BLOCK.sub(rewrite, text)


def generated_names(text: str) -> list[str]:
    """The names of the generated blocks `text` holds, in order."""
    return [match.group("name") for match in _BLOCK.finditer(text)]
