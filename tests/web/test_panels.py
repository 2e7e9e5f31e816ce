"""The playground's panels derive from the tool declarations: every tool a scenario enables is
on exactly one panel, or the page has its own control for it."""

from __future__ import annotations

from merchantbench.scenario import Scenario, ToolConfig
from merchantbench.tools.toolset import OPTIONAL_TOOLS, build_registry
from merchantbench.web.forms import OWN_CONTROLS, PANELS, panel_forms


def test_every_enabled_tool_is_on_one_panel_or_has_its_own_control() -> None:
    every = ToolConfig(**dict.fromkeys(OPTIONAL_TOOLS, True))
    registry = build_registry(Scenario(tools=every))
    panels = panel_forms(registry.schema_list())
    shown = [form.tool for _key, _title, forms in panels for form in forms]
    assert len(shown) == len(set(shown))
    assert sorted(shown + sorted(OWN_CONTROLS)) == sorted(t.name for t in registry.tools())
    assert [key for key, _title, _forms in panels] == [key for key, _title, _tools in PANELS]
    find = next(forms for key, _title, forms in panels if key == "find")
    assert {"market_brief", "hot_search_terms"} <= {form.tool for form in find}


def test_a_tool_the_scenario_leaves_off_is_on_no_panel() -> None:
    panels = panel_forms(build_registry(Scenario()).schema_list())
    shown = {form.tool for _key, _title, forms in panels for form in forms}
    assert not shown & set(OPTIONAL_TOOLS)
