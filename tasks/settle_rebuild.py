"""Task: keep the rebuilt folder or put the old one back (`codex_memories.consolidate.rebuild.settle_rebuild`)."""

from prefect import task

from codex_memories.consolidate.rebuild import SetAside
from codex_memories.consolidate.rebuild import settle_rebuild as settle
from codex_memories.outcomes import Outcome


@task(name="settle-rebuild", cache_policy=None)
def settle_rebuild(aside: SetAside, outcome: Outcome | None) -> bool:
    """True when the rebuilt folder was kept; False when the old one is back."""
    return settle(aside, outcome)
