"""A regex compiled the first time it is used, for the redactor's module-level patterns.

Contract: `LazyPattern(pattern, flags)` answers every call exactly as `re.compile(pattern, flags)`
would (it is that compiled pattern, built on the first call); `.pattern` is the source, known
without compiling, so other patterns can be written from it.

Why: the prompt hook runs in a fresh process on every prompt and redacts one short block; the
redact modules hold about a hundred module-level patterns, most of which that block never needs
(benchmarks/README.md, "Hook wall time"). Compiling them at import cost the hook tens of
milliseconds; now only the patterns a text reaches are compiled, once per process.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

_WHOLE = sys.maxsize  # `re.Pattern`'s own default for `endpos`


class LazyPattern:
    __slots__ = ("pattern", "_flags", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        # Two threads may both compile: the same pattern either way, the last one kept.
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.pattern, self._flags)
        return compiled

    def match(self, string: str, pos: int = 0, endpos: int = _WHOLE) -> re.Match[str] | None:
        return self.compiled.match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = _WHOLE) -> re.Match[str] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def search(self, string: str, pos: int = 0, endpos: int = _WHOLE) -> re.Match[str] | None:
        return self.compiled.search(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = _WHOLE) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = _WHOLE) -> list[Any]:
        return self.compiled.findall(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled.sub(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        return self.compiled.split(string, maxsplit)

    def __getattr__(self, name: str) -> Any:
        # Everything else a compiled pattern has (`flags`, `groups`, `groupindex`), from it. A
        # private name is not forwarded: before `__init__` has run (`copy`, unpickling) `_compiled`
        # is missing, and forwarding it would ask `compiled` for it again, endlessly.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.compiled, name)

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r}, {self._flags})"


def lazy_compile(pattern: str, flags: int = 0) -> LazyPattern:
    """`re.compile(pattern, flags)`, compiled on first use (see the module docstring)."""
    return LazyPattern(pattern, flags)
