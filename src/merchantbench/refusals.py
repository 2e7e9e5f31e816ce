"""The catalogue of refusal codes: every `error.code` a tool call can answer with.

A refusal is `{"ok": false, "error": {"code", "message", "path"?, "details"?}}` (see
`merchantbench.tools.errors`). The code is what an agent branches on, so each is declared here
once, with where it comes from and what it means; code raises `ToolError(Refusal.NOT_LISTED,
...)` or builds `failure(Refusal.LIMIT, ...)`, never a string literal. docs/tools.md's table of
codes is generated from this catalogue (`merchantbench.tools.doc_tables`), and a test keeps
the two equal.

`Refusal` is a `StrEnum`: a member is the code's string, so it is written to answers, traces
and records exactly as the literal was, and a record read back compares equal to it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

Source = Literal["call", "window", "store", "harness"]
SOURCES: dict[str, str] = {
    "call": "any call, before the tool runs",
    "window": "the session: the run and its decision window",
    "store": "a store tool: the rules of the platform",
    "harness": "an agent harness's own tools (memory, skills, code)",
}


class Refusal(StrEnum):
    """A refusal code, with `source` (see `SOURCES`) and `meaning` (when it is answered)."""

    source: Source
    meaning: str

    def __new__(cls, code: str, source: Source, meaning: str) -> Refusal:
        member = str.__new__(cls, code)
        member._value_ = code
        member.source = source
        member.meaning = meaning
        return member

    # --- any call --------------------------------------------------------------------------------
    UNKNOWN_TOOL = (
        "unknown_tool", "call",
        "no such tool, or an optional tool this scenario leaves off; the message lists the "
        "tools there are",
    )  # fmt: skip
    INVALID_JSON = (
        "invalid_json", "call",
        "the arguments are not a JSON object (NaN and Infinity included), nest too deep, or "
        "hold invalid Unicode",
    )  # fmt: skip
    INVALID_ARGUMENT = (
        "invalid_argument", "call",
        "the arguments do not fit the tool's schema, or are too large; `path` is a JSON path "
        "such as `$.items[2].sale_price`, `details` lists up to 20 problems",
    )  # fmt: skip
    IDEMPOTENCY_CONFLICT = (
        "idempotency_conflict", "call",
        "the idempotency key was already used for a different call",
    )  # fmt: skip
    # --- the window ------------------------------------------------------------------------------
    LIMIT = (
        "limit", "window",
        "the window's calls are used up (`clock.calls_per_window`); only `end_of_step` runs",
    )  # fmt: skip
    WINDOW_CLOSED = (
        "window_closed", "window",
        "this merchant closed the window and waits for the others (a market), or a call came "
        "after `end_of_step` in one batch",
    )  # fmt: skip
    RUN_OVER = ("run_over", "window", "the run has ended; nothing more runs")
    WINDOW_ENDED = (
        "window_ended", "window",
        "a write or `end_of_step` made for a window that has ended (the `X-Window` it names is "
        "not the open window): nothing was done, look at the store again",
    )  # fmt: skip
    PAUSED = (
        "paused", "window",
        "the playground's store is paused: nothing runs until the person presses Continue",
    )  # fmt: skip
    # --- the store -------------------------------------------------------------------------------
    UNKNOWN_PRODUCT = (
        "unknown_product", "store",
        "no such product id, or a product not launched yet (the two look the same)",
    )  # fmt: skip
    UNKNOWN_SUPPLIER = (
        "unknown_supplier", "store", "no such supplier id, or one with no launched product"
    )  # fmt: skip
    UNKNOWN_ORDER = ("unknown_order", "store", "no order with that id")
    ALREADY_LISTED = (
        "already_listed", "store", "the product is listed already (or twice in one batch)"
    )  # fmt: skip
    NOT_LISTED = ("not_listed", "store", "the product is not listed in this store")
    DUPLICATE = ("duplicate", "store", "a product appears twice in one delist request")
    PRODUCT_UNAVAILABLE = (
        "product_unavailable", "store", "its supplier has delisted the product"
    )  # fmt: skip
    PRICE_OUT_OF_RANGE = (
        "price_out_of_range", "store",
        "a sale price below 0.01 or above the scenario's multiple of the procurement price",
    )  # fmt: skip
    LISTING_LIMIT = (
        "listing_limit", "store", "the batch would exceed the active-listing cap"
    )  # fmt: skip
    STORE_CLOSED = (
        "store_closed", "store", "the store is closed for good: listings cannot change"
    )  # fmt: skip
    TOO_LARGE = (
        "too_large", "store", "the memory document would exceed `tools.memory_doc_bytes`"
    )  # fmt: skip
    # --- an agent harness ------------------------------------------------------------------------
    TOO_LONG = ("too_long", "harness", "a note, plan or skill over its length limit")
    UNKNOWN_SKILL = ("unknown_skill", "harness", "no skill by that name")
    SKILL_EXISTS = ("skill_exists", "harness", "a skill by that name exists: patch it")
    TOO_MANY_SKILLS = ("too_many_skills", "harness", "the harness's skill limit is reached")
    PATCH_MISMATCH = (
        "patch_mismatch", "harness", "a patch's `find` text does not occur exactly once"
    )  # fmt: skip
    CODE_EXECUTION_OFF = (
        "code_execution_off", "harness", "code execution is off in this harness's settings"
    )  # fmt: skip
    BAD_REQUEST = ("bad_request", "harness", "a code snippet sent a malformed tool request")
    NOT_ALLOWED_IN_CODE = (
        "not_allowed_in_code", "harness", "a tool that code may not call (`end_of_step`)"
    )  # fmt: skip
    BRIDGE_LIMIT = ("bridge_limit", "harness", "a code snippet made too many tool calls")
