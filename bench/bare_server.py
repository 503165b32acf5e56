"""The baseline for cold start: a bare MCP server on the same SDK, one trivial tool, stdio."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("bare")


@server.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


if __name__ == "__main__":
    server.run()
