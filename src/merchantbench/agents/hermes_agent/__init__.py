"""The real Hermes Agent (the published `hermes-agent` package) driven over our MCP server."""
