"""Fixtures of the sim tests (their helpers are in sim_support.py, imported by name: every
folder's conftest module is called `conftest`, so tests never import from it)."""

from sim_support import scenario  # noqa: F401  (pytest fixtures)
