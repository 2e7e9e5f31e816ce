"""Docstring parsing and the human-facing description."""

from __future__ import annotations

import pytest
from example_shop import shop_registry

from merchantbench.tools.docstring import parse_docstring

DOC = """Search the catalog.

    Results are ranked by relevance.
    Ties are broken by price.

    Args:
        query (str): Words to look for,
            in any order.
        page: 1-based page.

    Returns:
        A table:
            columns and rows.

    Raises:
        ToolError: never.

    Example:
        search(query="box")
    """


def test_sections_are_split_between_model_description_and_parameters() -> None:
    parsed = parse_docstring(DOC)
    assert parsed.summary == "Search the catalog."
    assert parsed.parameters == {
        "query": "Words to look for, in any order.",
        "page": "1-based page.",
    }
    assert parsed.description == (
        "Search the catalog.\n\nResults are ranked by relevance.\nTies are broken by price.\n\n"
        'Returns:\nA table:\n    columns and rows.\n\nExample:\nsearch(query="box")'
    )


def test_a_one_line_docstring_is_summary_and_description() -> None:
    parsed = parse_docstring("Show the balance.")
    assert (parsed.summary, parsed.description, parsed.parameters) == (
        "Show the balance.",
        "Show the balance.",
        {},
    )


def test_a_word_with_a_colon_in_the_body_is_not_a_section() -> None:
    parsed = parse_docstring("Do it.\n\nHint: try twice.\n")
    assert parsed.description == "Do it.\n\nHint: try twice."


@pytest.mark.parametrize(
    ("doc", "complaint"),
    [
        ("", "needs a docstring"),
        ("   \n  ", "needs a docstring"),
        ("Do.\n\nArgs:\n    a: one.\n    a: again.\n", "twice"),
        ("Do.\n\nArgs:\n    this is not an entry\n", "cannot read"),
    ],
)
def test_unreadable_docstrings_are_refused(doc: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        parse_docstring(doc)


def test_description_table_rows_follow_the_schema() -> None:
    described = shop_registry().describe("list_items")
    assert (described.kind, described.group, described.optional) == ("write", "listing", False)
    rows = {row.name: row for row in described.parameters}
    assert list(rows) == ["items", "items[].product_id", "items[].sale_price", "idempotency_key"]
    assert rows["items"].type == "list of object"
    assert rows["items"].constraints == "≥ 1 items, ≤ 5 items"
    assert rows["items[].sale_price"].constraints == "≥ 0.01, ≤ 1000000.0"
    assert rows["items[].sale_price"].required and not rows["idempotency_key"].required


def test_description_shows_enums_defaults_and_nullable_types() -> None:
    rows = {row.name: row for row in shop_registry().describe("search").parameters}
    assert rows["sort"].type == '"relevance" | "price_asc" | "price_desc"'
    assert rows["sort"].default == '"relevance"'
    assert rows["max_price"].type == "number | null"
    assert rows["max_price"].constraints == "> 0"
    assert rows["query"].constraints == "length ≥ 1, length ≤ 100"
    assert rows["query"].default is None and rows["query"].required


def test_markdown_has_a_heading_tags_and_one_table_line_per_row() -> None:
    described = shop_registry().describe("forecast_demand")
    text = described.as_markdown()
    assert text.startswith("### `forecast_demand`\n\n*read · monitoring · optional*\n")
    assert "| `days` | integer | no | `7` | ≥ 1, ≤ 30 | How many days ahead. |" in text
    assert shop_registry().describe("query_balance").as_markdown().count("|") == 0


def test_describe_unknown_tool_raises() -> None:
    with pytest.raises(KeyError):
        shop_registry().describe("nope")
