"""Fixtures of the sweep tests (helpers in tests/sweep_fixtures.py)."""

from sweep_fixtures import server, sweep_file  # noqa: F401  (pytest fixtures)
