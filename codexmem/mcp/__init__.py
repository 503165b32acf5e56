"""The MCP surface: thin tools over the services, one envelope for every answer."""
