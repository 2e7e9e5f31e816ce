"""Built-in baselines that need no model: idle, random, rule-based (and the expert and oracle
once calibrated). Importing this package registers them."""

from merchantbench.agents.baselines import idle  # noqa: F401
