"""Read a tool's Google-style docstring, which is written for the model.

The summary line and the body become the tool description; the `Args:` section gives one
description per parameter; `Raises:` is for developers and is dropped. Any other section
(`Returns:`, `Example:` …) stays in the description, because it tells the model what the tool
answers and how to call it.

    Search the wholesale catalog.            <- summary

    Results are ranked by BM25 relevance.    <- body

    Args:
        query: Words to look for in titles.  <- parameter descriptions
        page: 1-based page number; continuation lines are
            indented further and joined with a space.

    Returns:
        A table of products.                 <- kept in the description
"""

from __future__ import annotations

import inspect
import re
import textwrap
from dataclasses import dataclass, field

_PARAMETER_SECTIONS = frozenset({"Args", "Arguments", "Parameters"})
_DROPPED_SECTIONS = frozenset({"Raises"})
_KNOWN_SECTIONS = (
    _PARAMETER_SECTIONS
    | _DROPPED_SECTIONS
    | {
        "Returns",
        "Yields",
        "Example",
        "Examples",
        "Note",
        "Notes",
        "Warning",
        "Warnings",
    }
)
_SECTION_HEADER = re.compile(r"(?P<name>[A-Z][a-z]+):\s*\Z")
# "name: text" or "name (type): text"; the type is allowed for habit's sake and ignored,
# because the annotation is the one source of types.
_ENTRY = re.compile(r"(?P<name>\*{0,2}[A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*:\s*(?P<text>.*)\Z")


@dataclass(frozen=True)
class ToolDocstring:
    """What the model is told about a tool.

    Attributes:
        summary: The first line.
        description: Summary, body and kept sections, ready to be the tool description.
        parameters: Parameter name to its description, in docstring order.
    """

    summary: str
    description: str
    parameters: dict[str, str] = field(default_factory=dict)


def _split_sections(lines: list[str]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Separate the free text before the first section from the sections themselves."""
    head: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    for line in lines:
        match = _SECTION_HEADER.match(line)
        if match and match["name"] in _KNOWN_SECTIONS:
            sections.append((match["name"], []))
        elif sections:
            sections[-1][1].append(line)
        else:
            head.append(line)
    return head, sections


def _parse_entries(section: str, body: list[str]) -> dict[str, str]:
    """Parse `name: text` entries; deeper-indented lines continue the previous entry."""
    entries: dict[str, list[str]] = {}
    indents = [len(line) - len(line.lstrip()) for line in body if line.strip()]
    base = min(indents, default=0)
    current: list[str] | None = None
    for line in body:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        match = _ENTRY.match(line.strip())
        if indent == base and match:
            name = match["name"]
            if name in entries:
                raise ValueError(f"{section}: parameter {name!r} is documented twice")
            current = entries[name] = [match["text"].strip()]
        elif indent > base and current is not None:
            current.append(line.strip())
        else:
            raise ValueError(f"{section}: cannot read {line.strip()!r} as 'name: description'")
    return {name: " ".join(part for part in parts if part) for name, parts in entries.items()}


def _render_section(name: str, body: list[str]) -> str:
    text = textwrap.dedent("\n".join(body)).strip("\n")
    return f"{name}:\n{text}" if text else ""


def parse_docstring(docstring: str | None) -> ToolDocstring:
    """Parse a Google-style docstring into summary, description and parameter descriptions.

    Args:
        docstring: The raw `__doc__` of the tool function.

    Raises:
        ValueError: The docstring is empty or an `Args:` entry cannot be read.
    """
    text = inspect.cleandoc(docstring or "").strip()
    if not text:
        raise ValueError("a tool needs a docstring: it is the description the model reads")
    head, sections = _split_sections(text.splitlines())
    parts = ["\n".join(head).strip()]
    parameters: dict[str, str] = {}
    for name, body in sections:
        if name in _PARAMETER_SECTIONS:
            parameters.update(_parse_entries(name, body))
        elif name not in _DROPPED_SECTIONS:
            parts.append(_render_section(name, body))
    description = "\n\n".join(part for part in parts if part)
    return ToolDocstring(text.splitlines()[0].strip(), description, parameters)
