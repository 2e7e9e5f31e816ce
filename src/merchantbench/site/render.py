"""The site's files: HTML pages from the package's templates, the style and scripts copied from
the dashboard's and the site's static folders, each run's trace windows as scripts beside its
page. Every link is relative, nothing is fetched from elsewhere: the folder works from `file://`
and on any static host.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from merchantbench.web.pages import STATIC_DIR as WEB_STATIC
from merchantbench.web.windows import window_view, windows_recorded

HERE = Path(__file__).parent
ASSETS = "assets"  # the site's folder of style and scripts
WEB_ASSETS = ("style.css", "dom.js", "trace_view.js")  # the dashboard's, shared
SITE_ASSETS = ("site.css", "site_trace.js")
TRACE_DIR = "trace"  # a run page's folder of window scripts


def number(value: Any, digits: int = 2) -> str:
    """A figure for a table: integers as integers, others with `digits` decimals, None as —."""
    if value is None or isinstance(value, bool):
        return "—" if value is None else str(value)
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and digits == 0):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def environment() -> Environment:
    env = Environment(
        # The site's own templates first; the dashboard's for what both pages share.
        loader=FileSystemLoader([HERE / "templates", WEB_STATIC.parent / "templates"]),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["number"] = number
    return env


def write_assets(out: Path) -> None:
    target = out / ASSETS
    target.mkdir(parents=True, exist_ok=True)
    for name in WEB_ASSETS:
        shutil.copyfile(WEB_STATIC / name, target / name)
    for name in SITE_ASSETS:
        shutil.copyfile(HERE / "static" / name, target / name)


def write_page(env: Environment, template: str, path: Path, **context: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    html = env.get_template(template).render(**context)
    path.write_text(html, encoding="utf-8")


def write_trace(run_dir: Path, page_dir: Path) -> int:
    """Each window of the record as `trace/wN.js` (N from 1), a script that hands the window's
    view (web/windows.py) to the page. Returns the number of windows."""
    windows = windows_recorded(run_dir)
    folder = page_dir / TRACE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for window in range(windows):
        view = window_view(run_dir, window)
        text = json.dumps(view, ensure_ascii=False, separators=(",", ":"))  # NaN is JS too
        script = f"MB_TRACE_WINDOW({window + 1},{text});\n"
        (folder / f"w{window + 1}.js").write_text(script, encoding="utf-8")
    return windows
