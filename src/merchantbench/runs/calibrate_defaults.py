"""The calibration grid's defaults, apart from the grid (`merchantbench.runs.calibrate`) so
that `merchantbench calibrate --help` shows them without importing it."""

from __future__ import annotations

from pathlib import Path

DEFAULT_AGENTS = ("idle", "rule-based", "expert", "oracle")
DEFAULT_ROOT = Path("runs/calibration")
