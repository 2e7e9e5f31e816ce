"""The agent's tool set: the 26 core tools in the order of SPEC §8, and the optional tools a
scenario switches on.
"""

from __future__ import annotations

from merchantbench.scenario import Scenario
from merchantbench.tools import cash, control, listing, monitoring, optional, sourcing
from merchantbench.tools.registry import ToolRegistry

TOOL_MODULES = (sourcing, listing, cash, monitoring, control, optional)


def enabled_optional_tools(scenario: Scenario) -> list[str]:
    """Names of the optional tools the scenario switches on."""
    switches = {
        "market_brief": scenario.tools.market_brief,
        "hot_search_terms": scenario.tools.hot_search_terms,
    }
    return [name for name, on in switches.items() if on]


def build_registry(scenario: Scenario) -> ToolRegistry:
    """Every tool, in SPEC order, with the scenario's optional tools enabled."""
    return ToolRegistry.from_modules(*TOOL_MODULES, enabled=enabled_optional_tools(scenario))
