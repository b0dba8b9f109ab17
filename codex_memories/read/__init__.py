"""Read: memories back into sessions (injection, citations and their harvest, memory tools, notes, MCP)."""
