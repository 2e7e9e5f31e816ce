"""The table of built-in agents by name; each is imported only when first needed.

    make_agent("rule-based", {"markup": 2.5})
    make_agent("oracle", {}, hidden_market=market)   # privileged: the host hands it the market

`agent_settings_model(name)` is the frozen settings model the CLI validates `--agent-opt`
against; `check_settings` turns a bad key or type into one line. Every function here also takes
an agent of your own by its target, `package.module:Class` or `path/to/file.py:Class`
(agents/load.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from merchantbench.agents.base import AgentSettings, BaseAgent
from merchantbench.agents.load import AgentConfigError, is_target, load_class, load_own_agent

if TYPE_CHECKING:
    from merchantbench.catalog.market import Market


@dataclass(frozen=True)
class AgentEntry:
    """Where an agent's class lives and what it is.

    Attributes:
        target: "module:Class" of a `BaseAgent` subclass.
        summary: One line for `--list-agents`.
        privileged: Reads the hidden market (the oracle); in-process only, marked in records.
    """

    target: str
    summary: str
    privileged: bool = False

    def load(self) -> type[BaseAgent]:
        return load_class(self.target)


AGENTS: dict[str, AgentEntry] = {
    "idle": AgentEntry(
        "merchantbench.agents.baselines.idle:IdleAgent", "ends every window at once"
    ),
    "random": AgentEntry(
        "merchantbench.agents.baselines.random_agent:RandomAgent",
        "random valid-looking actions (a floor and a fuzzer)",
    ),
    "rule-based": AgentEntry(
        "merchantbench.agents.baselines.rule_based:RuleBasedAgent",
        "the paper's rule-based operator",
    ),
    "expert": AgentEntry(
        "merchantbench.agents.baselines.expert:ExpertAgent",
        "a strong hand-written operator using only the tools",
    ),
    # Validation agents: the expert with one failure from a known day (docs/diagnosis.md).
    **{
        name: AgentEntry(f"merchantbench.agents.baselines.failing:{cls}", f"VALIDATION: {what}")
        for name, cls, what in (
            ("fail-decay", "DecayAgent", "expert whose activity decays from day 92"),
            ("fail-decay-rb", "RuleBasedDecayAgent", "rule-based, activity decaying from day 92"),
            ("fail-abandon", "AbandonAgent", "expert that abandons the store at day 100"),
            ("fail-abandon-rb", "RuleBasedAbandonAgent", "rule-based, abandoning at day 100"),
            ("fail-narrow", "NarrowAgent", "expert that sources only weekly from day 61"),
            ("fail-stop-sourcing", "StopSourcingAgent", "expert listing nothing new from day 285"),
            (
                "fail-stop-sourcing-rb",
                "RuleBasedStopSourcingAgent",
                "rule-based, listing nothing new from day 285",
            ),
            ("fail-flat-prices", "FlatPricesAgent", "expert that never buys above 50 RMB"),
            ("fail-no-risk-response", "NoRiskResponseAgent", "expert ignoring adverse outcomes"),
            (
                "fail-no-rating-repricing",
                "NoRatingRepricingAgent",
                "expert holding its prices after rating drops",
            ),
        )
    },
    "oracle": AgentEntry(
        "merchantbench.agents.oracle:OracleAgent",
        "PRIVILEGED: reads the hidden market (the practical ceiling)",
        privileged=True,
    ),
    "react": AgentEntry(
        "merchantbench.agents.llm.react:ReActAgent", "ReAct harness over an OpenAI endpoint"
    ),
    "hermes": AgentEntry(
        "merchantbench.agents.llm.hermes:HermesAgent",
        "Hermes-style harness: code, memory, plan, skills",
    ),
    "hermes-agent": AgentEntry(
        "merchantbench.agents.hermes_agent.driver:HermesAgentDriver",
        "the real Hermes Agent (hermes-agent package) over MCP",
    ),
}


def agent_names() -> list[str]:
    return sorted(AGENTS)


def agent_entry(name: str) -> AgentEntry:
    """The table's entry of a built-in agent, or one made for an agent of your own named by
    its target (loaded and checked now: `AgentConfigError` says in one line what is wrong)."""
    found = AGENTS.get(name)
    if found is not None:
        return found
    if is_target(name):
        doc = (load_own_agent(name).__doc__ or "").strip()
        return AgentEntry(name, doc.splitlines()[0] if doc else "an agent of your own")
    if name.endswith(".py") or "/" in name or os.sep in name:
        raise AgentConfigError(
            f"unknown agent {name!r}: a file agent is named FILE.py:CLASS, the class after a "
            f"colon (e.g. {name}:MyAgent)"
        )
    raise AgentConfigError(
        f"unknown agent {name!r}; choose from {', '.join(agent_names())}, "
        "or give your own as MODULE:CLASS or FILE.py:CLASS"
    )


def agent_settings_model(name: str) -> type[AgentSettings]:
    return agent_entry(name).load().Settings


def check_settings(name: str, settings: dict[str, Any]) -> AgentSettings:
    """Validate `settings` against the agent's model; `AgentConfigError` names the problem."""
    model = agent_settings_model(name)
    try:
        return model.model_validate(settings)
    except ValidationError as exc:
        raise AgentConfigError(f"agent {name!r}: {_one_line(exc)}") from None


def make_agent(
    name: str, settings: dict[str, Any] | None = None, *, hidden_market: Market | None = None
) -> BaseAgent:
    """Build agent `name` from its settings.

    Args:
        name: A key of `AGENTS`, or the target of an agent of your own.
        settings: Values for the agent's settings model (unknown keys are refused).
        hidden_market: Given to a privileged agent only, and required by it.

    Raises:
        AgentConfigError: Unknown agent, bad settings, or a market given to (or withheld
            from) the wrong kind of agent.
    """
    entry = agent_entry(name)
    config = check_settings(name, settings or {})
    cls = entry.load()
    if entry.privileged:
        if hidden_market is None:
            raise AgentConfigError(f"agent {name!r} is privileged and needs the hidden market")
        return cls(config, hidden_market=hidden_market)  # type: ignore[call-arg]
    if hidden_market is not None:
        raise AgentConfigError(f"agent {name!r} is not privileged: it gets no hidden market")
    return cls(config)


def _one_line(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "settings"
        message = "unknown setting" if err["type"] == "extra_forbidden" else err["msg"]
        parts.append(f"{where}: {message} (got {err.get('input')!r})")
    return "; ".join(parts)
