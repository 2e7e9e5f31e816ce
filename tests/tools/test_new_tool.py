"""A tool is declared once: a read tool added to the declarations (in a scratch copy of the
package, with no other edit) shows up on the playground's panels, is covered by `check`, and
appears in docs/tools.md's generated index; and this repository's docs are up to date."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from merchantbench.refusals import Refusal
from merchantbench.tools.doc_tables import generated_names, update_generated
from merchantbench.tools.toolset import DECLARED
from scratch_package import edit, run_python, scratch_package

DOCS = Path(__file__).parents[2] / "docs" / "tools.md"
NEW_TOOL = '''

@tool(kind="read", group="cash")
def query_order_count(ctx: StoreContext) -> dict[str, Any]:
    """How many orders your store has received so far.

    Returns:
        orders: The number of orders placed with your store.
    """
    return {"orders": len(ctx.engine.state.orders)}
'''
PANELS = """
import json
import re
from merchantbench.scenario import load_scenario
from merchantbench.tools.toolset import build_registry
from merchantbench.web.forms import panel_forms
schemas = build_registry(load_scenario("smoke")).schema_list()
print(json.dumps({key: [f.tool for f in forms] for key, _title, forms in panel_forms(schemas)}))
"""


def test_a_new_read_tool_reaches_the_playground_check_and_docs(tmp_path: Path) -> None:
    root = scratch_package(tmp_path)
    cash = (root / "merchantbench" / "tools" / "cash.py").read_text(encoding="utf-8")
    edit(root, "tools/cash.py", cash, cash + NEW_TOOL)
    core = len(DECLARED.tools()) + 1

    panels = run_python(root, "-c", PANELS)
    assert panels.returncode == 0, panels.stderr
    assert "query_order_count" in json.loads(panels.stdout)["money"]

    checked = run_python(root, "-m", "merchantbench.cli", "check", "--scenario", "smoke")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"all {core} tools answered" in checked.stdout

    docs = shutil.copy(DOCS, tmp_path / "tools.md")
    stale = run_python(root, "-m", "merchantbench.cli", "tools", "docs", str(docs))
    assert stale.returncode != 0 and "out of date" in stale.stderr
    written = run_python(root, "-m", "merchantbench.cli", "tools", "docs", str(docs), "--write")
    assert written.returncode == 0, written.stderr
    text = Path(docs).read_text(encoding="utf-8")
    assert "| `query_order_count` | cash | read | How many orders your store has received" in text
    assert f"{core} core tools" in text


def test_the_docs_generated_tables_are_current() -> None:
    """docs/tools.md's tool index and refusal codes are what the declarations generate
    (`merchantbench tools docs docs/tools.md --write` rewrites them)."""
    text = DOCS.read_text(encoding="utf-8")
    assert generated_names(text) == ["refusal-codes", "tool-index"]
    assert update_generated(text) == text
    for code in Refusal:
        assert f"| `{code}` | {code.source} |" in text
    for declared in DECLARED.tools(include_optional=True):
        assert f"| `{declared.name}` | {declared.group} | {declared.kind} |" in text


def _prose(text: str) -> str:
    """`text` without generated blocks and fenced examples (printed output may show counts)."""
    text = re.sub(r"<!-- generated: .*?<!-- end generated -->", "", text, flags=re.DOTALL)
    return re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)


def test_no_file_states_how_many_tools_there_are() -> None:
    """A count of tools in prose goes stale with the next tool: say "the tools" or derive it."""
    n = len(DECLARED.tools())
    count = re.compile(rf"\b{n} (core |environment |store )?tools\b|Discrete\({n}\)")
    project = DOCS.parents[1]
    files = [project / "README.md", *(project / "docs").glob("*.md")]
    files += [*(project / "src").rglob("*.py"), *(project / "tests").rglob("*.py")]
    stated = [
        f"{path.relative_to(project)}: {match.group(0)}"
        for path in files
        for match in count.finditer(_prose(path.read_text(encoding="utf-8")))
    ]
    assert stated == []
