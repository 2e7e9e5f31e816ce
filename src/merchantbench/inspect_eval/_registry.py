"""Inspect's entry point (`[project.entry-points.inspect_ai]`): importing this module registers
the task `merchantbench/merchantbench`, so `inspect eval merchantbench/merchantbench` finds it."""

from merchantbench.inspect_eval.task import merchantbench

__all__ = ["merchantbench"]
