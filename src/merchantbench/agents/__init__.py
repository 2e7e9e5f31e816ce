"""Agents: baselines and LLM harnesses, all acting through a `Session`."""
