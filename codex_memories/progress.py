"""Progress of long work, for whoever is watching (the CLI's progress bars).

The library and tasks call `start`/`advance`; a front end subscribes. With no subscriber these
calls do nothing, so flows run the same under a Prefect worker as under the CLI.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol


class ProgressListener(Protocol):
    def start(self, stage: str, total: int) -> None: ...
    def advance(self, stage: str, amount: int = 1) -> None: ...


_listeners: list[ProgressListener] = []
_lock = threading.Lock()


def subscribe(listener: ProgressListener) -> Callable[[], None]:
    with _lock:
        _listeners.append(listener)

    def unsubscribe() -> None:
        with _lock:
            _listeners.remove(listener)

    return unsubscribe


def start(stage: str, total: int) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener.start(stage, total)


def advance(stage: str, amount: int = 1) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener.advance(stage, amount)
