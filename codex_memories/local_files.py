"""Writing one local file so that no reader ever sees it half-written.

Contract: `write_text_atomically(path, text, mode=None)` writes `text` (UTF-8) to a temporary
file in the same folder, flushes it to disk and renames it over `path` (creating the folder);
the file keeps its previous mode, or gets `mode`, or (new, no mode) the temporary's 0600. On any
error the temporary is removed and the error propagates; `path` is then as it was. Standard
library only: the hooks' light modules may use it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def write_text_atomically(path: Path, text: str, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        elif path.exists():
            shutil.copymode(path, temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
