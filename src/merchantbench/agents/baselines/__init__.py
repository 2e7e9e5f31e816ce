"""Built-in baselines that need no model (listed in merchantbench.agents.registry)."""
