"""The message list a harness sends to the model, its size, and how it is trimmed.

Size is estimated, not tokenised, so that it is the same for every provider and for a resumed
run: ASCII text counts one token per 4 characters, other characters (CJK product names) one
token each, and every message adds 4 tokens of framing. Real tokenisers land within a few tens
of per cent of this, which is close enough for thresholds of tens of thousands of tokens.

Compaction follows the paper: when the prompt reaches `compact_at_tokens`, the harness sends a
reminder to save notes with `write_memory_doc`; after the model's next turn the conversation
keeps its system message and the newest `keep_tokens` tokens, cut at a user message so that no
tool result is separated from the call that asked for it.
"""

from __future__ import annotations

import json
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from merchantbench.tools.agent_input import HostileInput, decode_arguments, safe_text, scrub
from merchantbench.tools.errors import unknown_tool

_FRAMING_TOKENS = 4

COMPACTION_REMINDER = (
    "Your conversation is about to be trimmed to its most recent part to fit the context "
    "window. Save anything you will need later (plans, suppliers, products, lessons) now with "
    "write_memory_doc; you can read it back with read_memory_doc."
)
TRIMMED_NOTE = (
    "[Earlier turns of this conversation were removed to fit the context window. Your saved "
    "notes are available through read_memory_doc.]"
)


def estimate_tokens(text: str) -> int:
    """Approximate token count of a text (see the module docstring)."""
    # Encoding with errors="ignore" counts ASCII characters at C speed; prompts are 100s of KB.
    ascii_chars = len(text) if text.isascii() else len(text.encode("ascii", "ignore"))
    return (ascii_chars + 3) // 4 + (len(text) - ascii_chars)


def message_tokens(message: dict[str, Any]) -> int:
    """Approximate tokens of one chat message, tool calls included."""
    size = _FRAMING_TOKENS + estimate_tokens(message.get("content") or "")
    for call in message.get("tool_calls") or ():
        function = call["function"]
        size += _FRAMING_TOKENS + estimate_tokens(function["name"] + function["arguments"])
    return size


@dataclass(frozen=True)
class ToolCall:
    """One tool call from an assistant message, decoded.

    Attributes:
        call_id: The id the tool message must answer.
        name: Tool name as the model wrote it.
        args: Decoded arguments, or None when they did not parse.
        error: The parsing error to send back instead of running the tool, if any.
    """

    call_id: str
    name: str
    args: dict[str, Any] | None
    error: dict[str, Any] | None = None


def parse_tool_calls(message: dict[str, Any], known_tools: AbstractSet[str]) -> list[ToolCall]:
    """Decode an assistant message's tool calls; bad JSON or an unknown name becomes an error.

    The arguments go through the same checks as at the agent surface (merchantbench.tools.
    agent_input): invalid text, deep nesting, oversize and non-finite numbers are refused
    here, without recursion, and never reach a tool."""
    calls = []
    for raw in message.get("tool_calls") or ():
        name = raw["function"]["name"] or ""
        text = raw["function"]["arguments"] or ""
        error = None
        args: Any = None
        if name not in known_tools:
            error = unknown_tool(safe_text(name), sorted(known_tools))  # the one answer to it
        else:
            try:
                args = decode_arguments(text)
            except HostileInput as refusal:
                error = refusal.result
        if error is not None:
            error["error"]["message"] = "parsing error: " + error["error"]["message"]
        calls.append(ToolCall(scrub(raw["id"]), name, args, error))
    return calls


class Conversation:
    """Messages of one run, with their estimated size kept up to date.

    Args:
        compact_at_tokens: Prompt size that triggers the reminder and then the trim.
        keep_tokens: Newest tokens kept by a trim (the system message is always kept).
    """

    def __init__(self, compact_at_tokens: int = 160_000, keep_tokens: int = 30_000) -> None:
        if keep_tokens >= compact_at_tokens:
            raise ValueError("keep_tokens must be smaller than compact_at_tokens")
        self.compact_at_tokens = compact_at_tokens
        self.keep_tokens = keep_tokens
        self.messages: list[dict[str, Any]] = []
        self.tokens = 0
        self.reminder_sent = False
        self.tool_tokens = 0  # the tool schemas are part of every prompt

    def start(self, system_prompt: str, tools: list[dict[str, Any]]) -> None:
        self.messages = []
        self.tokens = 0
        self.tool_tokens = estimate_tokens(json.dumps(tools, ensure_ascii=False))
        self.append({"role": "system", "content": system_prompt})
        if self.prompt_tokens + self.keep_tokens >= self.compact_at_tokens:
            raise ValueError(
                f"compact_at_tokens ({self.compact_at_tokens}) must exceed the fixed prompt "
                f"(system and tools, ~{self.prompt_tokens} tokens) plus keep_tokens "
                f"({self.keep_tokens})"
            )

    @property
    def started(self) -> bool:
        return bool(self.messages)

    @property
    def prompt_tokens(self) -> int:
        """Estimated size of the next prompt: messages plus tool schemas."""
        return self.tokens + self.tool_tokens

    def append(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.tokens += message_tokens(message)

    def add_user(self, text: str) -> None:
        self.append({"role": "user", "content": text})

    def add_tool_result(self, call_id: str, result: dict[str, Any]) -> None:
        content = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
        self.append({"role": "tool", "tool_call_id": call_id, "content": content})

    def manage_context(self) -> bool:
        """Before a model call: trim if the reminder had its turn, else remind if the prompt
        has grown past the threshold. True if the conversation was trimmed."""
        if self.reminder_sent:
            return self.trim(TRIMMED_NOTE)
        if self.prompt_tokens >= self.compact_at_tokens:
            self.add_user(COMPACTION_REMINDER)
            self.reminder_sent = True
        return False

    def trim(self, note: str) -> bool:
        """Keep the system message and the newest `keep_tokens`; True if anything was cut."""
        budget = self.keep_tokens
        start = len(self.messages)
        while start > 1 and budget - message_tokens(self.messages[start - 1]) >= 0:
            start -= 1
            budget -= message_tokens(self.messages[start])
        # Start at a user turn so tool results stay with their calls; if the newest turn alone
        # is over budget, keep that whole turn rather than nothing.
        users = [i for i in range(1, len(self.messages)) if self.messages[i]["role"] == "user"]
        later = [i for i in users if i >= start]
        cut = later[0] if later else (users[-1] if users else 1)
        self.reminder_sent = False
        if cut <= 1:
            return False
        kept = [self.messages[0], {"role": "user", "content": note}, *self.messages[cut:]]
        self.messages = []
        self.tokens = 0
        for message in kept:
            self.append(message)
        return True
