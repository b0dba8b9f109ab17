"""Recall over the memory folder: a rebuildable index, hybrid lexical + semantic search, prompt context."""
