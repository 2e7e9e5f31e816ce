"""`merchantbench doctor`: which optional parts are here, and how to add the missing ones."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object instead")] = False,
) -> None:
    """Say which optional parts are present (bubblewrap, Chromium, the Hermes Agent environment,
    Ray, Inspect AI), what each is for and how to add it. Always exits 0."""
    from merchantbench.optional_parts import PARTS

    found: list[dict[str, Any]] = []
    for part in PARTS.values():
        where = part.locate()
        works, note = part.probe() if where is not None and part.probe is not None else (None, "")
        found.append({
            "part": part.key, "name": part.name, "present": where is not None, "where": where,
            "works": works, "note": note, "needed_for": part.needed_for, "install": part.install,
        })  # fmt: skip
    if as_json:
        typer.echo(json.dumps({"parts": found}, ensure_ascii=False, indent=2))
        return
    for row in found:
        typer.echo(_line(row))


def _line(row: dict[str, Any]) -> str:
    if not row["present"]:
        return f"missing  {row['name']}: add with `{row['install']}` · for {row['needed_for']}"
    if row["works"] is False:
        return f"broken   {row['name']}: {row['where']}, but {row['note']}"
    return f"ok       {row['name']}: {row['where']} · for {row['needed_for']}"
