"""LLM agents: the ReAct harness and the Hermes-style one built on it, over any
OpenAI-compatible endpoint; the model client; a scripted server for tests and demos.
Importing this package registers the agents `react` and `hermes`."""

from merchantbench.agents.llm import hermes, react  # noqa: F401  (registers the agents)
from merchantbench.agents.llm.react import ReActAgent

__all__ = ["ReActAgent"]
