"""Front ends that serve a run to agents outside our process: the HTTP server
(`merchantbench serve`, the public artifact's agent protocol and a small JSON API; docs/http.md)
and the MCP server (`merchantbench mcp`; docs/mcp.md)."""

from merchantbench.serve.app import AppExtension, ServeConfig, create_app

__all__ = ["AppExtension", "ServeConfig", "create_app"]
