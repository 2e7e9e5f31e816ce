"""Built-in baselines that need no model. Importing this package registers them."""

from merchantbench.agents.baselines import idle, random_agent, rule_based  # noqa: F401
