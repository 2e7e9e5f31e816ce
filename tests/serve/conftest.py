"""Fixtures of the serve tests (their helpers are in serve_support.py, imported by name: every
folder's conftest module is called `conftest`, so tests never import from it)."""

from serve_support import live, private_cache  # noqa: F401  (pytest fixtures)
