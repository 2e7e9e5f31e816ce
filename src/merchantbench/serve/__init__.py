"""The HTTP front end (`merchantbench serve`): the public artifact's agent protocol and a small
JSON API over each hosted run's agent surface. See docs/http.md."""

from merchantbench.serve.app import AppExtension, ServeConfig, create_app

__all__ = ["AppExtension", "ServeConfig", "create_app"]
