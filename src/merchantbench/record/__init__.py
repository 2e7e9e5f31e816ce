"""The run record's format: what a run directory holds and how each file is read and written.

Below agents and metrics: nothing here imports an agent, a metric or a front end. The driver
that writes records while an agent plays (merchantbench.runs) stands above it.
"""
