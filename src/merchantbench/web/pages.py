"""Templates and static assets of the web pages, served from the package (no internet)."""

from __future__ import annotations

from pathlib import Path

from fastapi.templating import Jinja2Templates

HERE = Path(__file__).parent
STATIC_DIR = HERE / "static"
templates = Jinja2Templates(directory=str(HERE / "templates"))


def _money(value: object) -> str:
    """RMB with thousands separators, for display."""
    if not isinstance(value, int | float):
        return "—"
    return f"{value:,.2f}"


def _number(value: object, digits: int = 3) -> str:
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


templates.env.filters["money"] = _money
templates.env.filters["number"] = _number
