"""Built-in baselines that need no model. Importing this package registers them."""

from merchantbench.agents import oracle  # noqa: F401  (privileged: runs only through the runner)
from merchantbench.agents.baselines import expert, idle, random_agent, rule_based  # noqa: F401
