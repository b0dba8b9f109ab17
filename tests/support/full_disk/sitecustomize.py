"""A full disk for one folder, in a test's subprocess (put this folder on its PYTHONPATH).

Every `os.write` to a file under `$CODEX_MEMORIES_TEST_FULL_DISK` fails with ENOSPC, as on a full
disk: the write primitives of the memory folder and of phase 2's staging copy both write with
`os.write`. Writes elsewhere (the state DB, Prefect's files) are left alone.
"""

import errno
import os

_FULL = os.environ.get("CODEX_MEMORIES_TEST_FULL_DISK")

if _FULL:
    _write = os.write

    def _write_to_a_full_disk(descriptor, data):
        try:
            target = os.readlink(f"/proc/self/fd/{descriptor}")
        except OSError:
            target = ""
        if target.startswith(_FULL + os.sep):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return _write(descriptor, data)

    os.write = _write_to_a_full_disk
