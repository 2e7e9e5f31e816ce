"""Front ends that serve a run to agents outside our process (MCP; HTTP)."""
