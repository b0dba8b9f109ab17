"""Test-suite wide setup.

Prefect writes under PREFECT_HOME, so the suite points it at a temporary directory before
Prefect is imported; analytics are off. One Prefect test harness is shared per session (it costs
about 10 s to start), requested by the flow tests through `prefect_harness`. Hypothesis runs
derandomized in CI (profile `ci`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import settings as hypothesis_settings

os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="codex-memories-prefect-")
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_LOGGING_TO_API_ENABLED", "false")

# Property-based tests: in CI (`CI` set, or HYPOTHESIS_PROFILE=ci) the same examples every run, so
# a red build is the code's doing, not the draw's; locally a fresh draw each run finds more.
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield
