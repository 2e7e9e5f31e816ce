"""LLM agents: the ReAct harness and the Hermes-style one built on it, over any
OpenAI-compatible endpoint; the model client; a scripted server for tests and demos.
The agents `react` and `hermes` are listed in merchantbench.agents.registry."""
