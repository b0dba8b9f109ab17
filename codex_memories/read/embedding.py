"""The one error of the recall encoder: it cannot run, which is never the same as "no memories".

Contract:
- `EmbedderUnavailable` is raised when the packaged model behind recall's vectors cannot be
  found, read or recognised (`contextual.EncoderUnavailable` is the concrete case). The CLI, the
  MCP tools and the prompt hook catch this one class and say so: a broken install must not look
  like an empty memory.
- Standard library only: callers import it without loading numpy or the model.

Recall's vectors were static WordLlama embeddings until issue 27; they are now the contextual
encoder's (`contextual`), stored per chunk in the index (`index`).
"""

from __future__ import annotations


class EmbedderUnavailable(RuntimeError):
    """The packaged model recall needs cannot be found, read or recognised."""
