"""The agent's tool set: the core tools in the order of docs/design.md §8, and the optional tools a
scenario switches on, each stating the scenario's limits. Every list or count of tools (the
playground's panels, the check script's coverage, docs/tools.md's index) derives from `DECLARED`.
"""

from __future__ import annotations

from merchantbench.scenario import Scenario, ToolConfig
from merchantbench.tools import cash, control, listing, monitoring, optional, sourcing
from merchantbench.tools.registry import ToolRegistry

TOOL_MODULES = (sourcing, listing, cash, monitoring, control, optional)

# Every environment tool as declared (stating the default scenario's limits).
DECLARED = ToolRegistry.from_modules(*TOOL_MODULES)


def _window_closer(registry: ToolRegistry) -> str:
    closer = registry.window_closer
    if closer is None:
        raise RuntimeError("no environment tool is declared with ends_window=True")
    return closer


# The tool that closes a decision window, by name, for code that reads trace rows (metrics)
# or only sees schemas (a code bridge). Derived from the declaration, never spelled out.
END_OF_STEP: str = _window_closer(DECLARED)


def _optional_tools(registry: ToolRegistry) -> tuple[str, ...]:
    names = tuple(t.name for t in registry.tools(include_optional=True) if t.optional)
    switches = ToolConfig.model_fields
    unswitched = [name for name in names if switches.get(name) is None]
    if unswitched:
        raise RuntimeError(f"optional tools without a `tools.<name>` switch: {unswitched}")
    return names


# Each optional tool is switched on by the scenario's `tools.<its name>`.
OPTIONAL_TOOLS: tuple[str, ...] = _optional_tools(DECLARED)


def enabled_optional_tools(scenario: Scenario) -> list[str]:
    """Names of the optional tools the scenario switches on."""
    return [name for name in OPTIONAL_TOOLS if getattr(scenario.tools, name) is True]


def build_registry(scenario: Scenario) -> ToolRegistry:
    """Every tool, in the order of docs/design.md §8, stating the scenario's limits in its
    description and schema bounds, with the scenario's optional tools enabled."""
    return DECLARED.render(scenario).enable(enabled_optional_tools(scenario))
