"""One catalogue of refusal codes (merchantbench.refusals.Refusal): no code is a string literal
in the code that answers it, and every code an answer carries is a member."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import merchantbench
from merchantbench.refusals import Refusal
from merchantbench.scenario import load_scenario
from merchantbench.session import Session
from merchantbench.tools.errors import FRAMEWORK_CODES, ToolError, failure

SRC = Path(merchantbench.__file__).parent
# What builds a tool's answer. (An HTTP error of the protocol, `ProtocolError`, is the HTTP API's
# own status and code, docs/http.md.)
RAISERS = {"failure", "ToolError", "ActionRejected"}


def _literal_codes() -> list[str]:
    found = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            first = node.args[0]
            if name in RAISERS and isinstance(first, ast.Constant) and first.value in set(Refusal):
                found.append(f"{path.relative_to(SRC)}:{node.lineno} {first.value}")
    return found


def test_no_refusal_code_is_spelled_out_where_it_is_answered() -> None:
    assert _literal_codes() == []


def test_a_refusal_is_written_as_its_plain_string() -> None:
    answer = failure(Refusal.LIMIT, "no more calls")
    assert type(answer["error"]["code"]) is str and json.dumps(answer).count('"limit"') == 1
    assert type(ToolError(Refusal.NOT_LISTED, "x").code) is str
    assert {c for c in Refusal if c.source == "call"} == FRAMEWORK_CODES
    assert Refusal("invalid_argument") is Refusal.INVALID_ARGUMENT


def test_every_code_a_session_answers_is_in_the_catalogue() -> None:
    session = Session.open(load_scenario("smoke"), seed=2)
    answers = [
        session.call("no_such_tool"),
        session.call("search_products", "{bad"),
        session.call("search_products", {"page": 0}),
        session.call("get_product_detail", {"product_id": "nope"}),
        session.call("adjust_price", {"product_id": "nope", "sale_price": 3}),
    ]
    codes = [answer["error"]["code"] for answer in answers]
    assert codes == ["unknown_tool", "invalid_json", "invalid_argument", "unknown_product",
                     "unknown_product"]  # fmt: skip
    assert all(code in set(Refusal) for code in codes)


def test_an_unknown_tool_has_one_answer_whatever_the_name_is() -> None:
    """Any name the run does not offer (a typo, an optional tool left off, a number, invalid
    text, a name too long to be a tool's) gets the registry's one message, which lists the
    tools; a name too long to be declared is never cut down to a declared one."""
    session = Session.open(load_scenario("smoke"), seed=2)
    offered = ", ".join(schema["function"]["name"] for schema in session.tool_schemas())
    tail = f" Available tools: {offered}."
    cases = {
        "query_balanse": "There is no tool named 'query_balanse'. Did you mean 'query_balance'?",
        "market_brief": "The tool 'market_brief' is not enabled in this scenario.",
        7: "There is no tool named '7'.",
        "bad\udc80": "There is no tool named 'bad\\\\udc80'.",
        "end_of_step" + "_" * 60: f"There is no tool named {'end_of_step' + '_' * 54!r}.",
    }
    for name, message in cases.items():
        answer = session.call(name, {})  # type: ignore[arg-type]
        assert answer == {"ok": False, "error": {"code": "unknown_tool", "message": message + tail}}
    assert session.window == 0 and [e["error"] for e in session.trace] == ["unknown_tool"] * 5
