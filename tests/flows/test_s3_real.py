"""The object-store tests again, against a real S3 implementation (Ceph's radosgw).

Runs when CODEX_MEMORIES_TEST_S3_ENDPOINT is set, with the keys in the AWS environment:
`eval "$(scripts/ceph-s3 start | sed 's/^/export /')"` starts one on 127.0.0.1 (CI does this in
its own stage). Skipped otherwise: moto covers the same paths in the fast tests.
"""

from __future__ import annotations

import os

import pytest

from tests.flows.test_backfill import home, test_an_s3_prefix_is_copied_to_the_cache_and_backfilled_resumably  # noqa: F401
from tests.flows.test_object_store_root import (  # noqa: F401 - collected here against the real endpoint
    bucket_root,
    test_a_second_worker_diffs_against_the_stored_baseline,
    test_phase_1_and_2_write_the_memory_folder_and_its_baseline_to_the_bucket,
)
from tests.support.s3 import S3Endpoint

ENDPOINT_ENV = "CODEX_MEMORIES_TEST_S3_ENDPOINT"

pytestmark = [
    pytest.mark.s3_real,
    pytest.mark.flow,
    pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(not os.environ.get(ENDPOINT_ENV), reason=f"{ENDPOINT_ENV} is not set (see scripts/ceph-s3)"),
]


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> S3Endpoint:
    """The real endpoint; its keys come from the AWS environment the caller set."""
    url = os.environ[ENDPOINT_ENV]
    monkeypatch.setenv("CODEX_MEMORIES_S3_ENDPOINT_URL", url)
    monkeypatch.setenv("AWS_DEFAULT_REGION", os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    return S3Endpoint(url=url, port=0, server=None)
