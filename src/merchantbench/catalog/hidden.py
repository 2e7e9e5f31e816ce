"""What an agent must never see, as words, and a scan of an output for them.

`HIDDEN_FIELDS` (in `catalog.market`) names every hidden per-product field of the market. An
output shown to an agent (the brief, an observation, a tool result) must not carry one of
those names as a key or table column, nor the words below that describe hidden state in prose
(reference price, elasticity, hazards, fates, stock capacity and refill, the seed). The test of
every tool (`tests/tools/test_hidden_fields.py`) and the shipped conformance check
(`merchantbench.check`) both scan with this one definition.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from merchantbench.catalog.market import HIDDEN_FIELDS

__all__ = [
    "HIDDEN_FIELDS",
    "HIDDEN_KEY_PARTS",
    "HIDDEN_TEXT",
    "HIDDEN_WORDS",
    "hidden_names_in",
    "keys_and_columns",
    "native",
]

# Words of hidden state; the seed is one of them (its value is scanned by the check).
HIDDEN_WORDS: tuple[str, ...] = ("p_ref", "elasticity", "hazard", "fate", "seed")
# Key and column names may not even contain these; free text may say "demand" in prose.
HIDDEN_KEY_PARTS: tuple[str, ...] = (
    *HIDDEN_FIELDS,
    *HIDDEN_WORDS,
    "risk",
    "trap",
    "capacity",
    "refill",
)
# Free text may not contain these anywhere (compared lower-cased). "seed" is not among them:
# it is a catalog noun too ("Seed Starter Tray"), so free text is searched for it only where it
# names a value (SEED_IN_TEXT); the seed's value itself is looked for by the conformance check.
HIDDEN_TEXT: tuple[str, ...] = (
    *(word for word in HIDDEN_WORDS if word != "seed"),
    "type_id",
    "is_trap",
    "risk_",
    "stock_capacity",
    "stock_refill",
    "event_start",
    "event_end",
    "reference price",
)


SEED_IN_TEXT = re.compile(r"_seed|seed(?:_|\s*[:=#]|\s*\d)")


def keys_and_columns(value: Any) -> Iterator[str]:
    """Every dict key in `value`, and the names of its tables' `columns`."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            if key == "columns" and isinstance(item, list):
                yield from (str(c) for c in item)
            yield from keys_and_columns(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from keys_and_columns(item)


def native(value: Any) -> bool:
    """Plain JSON types only (numpy scalars would trip a JSON encoder or an HTTP adapter)."""
    if isinstance(value, dict):
        return all(type(k) is str and native(v) for k, v in value.items())
    if isinstance(value, list):
        return all(native(item) for item in value)
    return value is None or type(value) in (str, int, float, bool)


def hidden_names_in(output: Any) -> list[str]:
    """What in `output` names hidden state: offending keys and words, empty when clean.

    Args:
        output: A text (brief, observation) or a JSON-able tool result.

    Returns:
        One line per problem, e.g. `"key 'p_ref_fen'"` or `"text 'seed'"`; `"not plain JSON"`
        when the output holds values a JSON encoder would not take as they are.
    """
    problems = [] if native(output) else ["not plain JSON"]
    for key in keys_and_columns(output):
        problems += [f"key {key!r}" for part in HIDDEN_KEY_PARTS if part in key.lower()][:1]
    text = (
        output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
    )
    lowered = text.lower()
    problems += [f"text {word!r}" for word in HIDDEN_TEXT if word in lowered]
    if SEED_IN_TEXT.search(lowered):
        problems.append("text 'seed'")
    return problems
