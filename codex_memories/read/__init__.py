"""Read: memories back into sessions (injection, recall, citations and their harvest, memory tools, notes, MCP)."""
