"""Fixtures of the web tests (their helpers are in web_support.py, imported by name: every
folder's conftest module is called `conftest`, so tests never import from it)."""

from web_support import browser, shots  # noqa: F401  (pytest fixtures)
