"""`codex-memories` commands of the read path and of forgetting (merged into the main CLI)."""

from __future__ import annotations

import typer

memory_app = typer.Typer()
