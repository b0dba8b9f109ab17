"""The `codex-memories` command line, on top of the flows and the library (`main:main`)."""
