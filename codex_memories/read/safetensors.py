"""The two ways our packaged models are found and read: a package's folder, and a safetensors header.

Contract:
- `installed_package_dir(name)` is the folder of an installed package, or None when it is not
  installed (the caller says how to install it).
- `read_header(path)` is a safetensors file's JSON header and the byte offset where its data
  starts (format: a little-endian u64 header size, the JSON header, then the data). It raises
  `OSError` for an unreadable file and `ValueError` (`struct.error` included) for one that is not
  safetensors; the caller names the model in its own error. Tensor checks and memory-mapping stay
  with the caller, which knows the dtypes and shapes it expects.
- Standard library only: the prompt hook imports it.
"""

from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path
from typing import Any

_HEADER_SIZE = struct.Struct("<Q")


def installed_package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def read_header(path: Path) -> tuple[Any, int]:
    with path.open("rb") as file:
        (header_size,) = _HEADER_SIZE.unpack(file.read(_HEADER_SIZE.size))
        header = json.loads(file.read(header_size))
    return header, _HEADER_SIZE.size + header_size
