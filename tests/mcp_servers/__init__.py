"""Real MCP servers for minipi's tests (``toolbox``: the SDK's MCPServer, over stdio or
streamable HTTP; ``silent``: a process that never answers), and helpers that start them."""
