"""The extraction map's freeze of the collector: old objects out of full passes, and back after."""

from __future__ import annotations

import gc
import threading
import weakref

from codex_memories.extract.collector import frozen_old_objects


def test_objects_that_exist_when_the_block_starts_are_frozen_and_come_back_after():
    assert gc.get_freeze_count() == 0
    held = [object() for _ in range(1000)]
    with frozen_old_objects():
        assert gc.get_freeze_count() >= len(held)
    assert gc.get_freeze_count() == 0


def test_garbage_frozen_with_the_old_objects_is_collected_once_the_block_ends():
    class Cycle:
        pass

    def make_cycle() -> weakref.ref[Cycle]:
        first, second = Cycle(), Cycle()
        first.other, second.other = second, first
        return weakref.ref(first)

    gc.disable()  # the cycle must still exist, unreachable, when the block starts
    try:
        alive = make_cycle()
        with frozen_old_objects():
            gc.collect()
            assert alive() is not None  # frozen: full passes leave it alone
    finally:
        gc.enable()
    gc.collect()
    assert alive() is None


def test_the_last_of_two_overlapping_blocks_unfreezes():
    inside, leave = threading.Event(), threading.Event()

    def other_run() -> None:
        with frozen_old_objects():
            inside.set()
            leave.wait(10)

    worker = threading.Thread(target=other_run)
    worker.start()
    try:
        assert inside.wait(10)
        with frozen_old_objects():
            pass
        assert gc.get_freeze_count() > 0  # the other run is still in its map
    finally:
        leave.set()
        worker.join(10)
    assert gc.get_freeze_count() == 0
