"""Object-store plumbing of `codex_memories.storage`: endpoint options, transient-error rules."""

from __future__ import annotations

import pytest
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

from codex_memories.runtime import memory_root
from codex_memories.settings import load_runtime_config
from codex_memories.storage import FsspecMemoryRoot, UnsafePathError, is_transient_storage_error, object_store_options


def test_only_s3_urls_get_the_endpoint_and_no_credentials_ever() -> None:
    assert object_store_options("s3://b/p", s3_endpoint_url="http://127.0.0.1:9000") == {
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:9000"}
    }
    assert object_store_options("s3://b/p", s3_endpoint_url=None) == {}
    assert object_store_options("/srv/memories", s3_endpoint_url="http://127.0.0.1:9000") == {}


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), True),
        (ReadTimeoutError(endpoint_url="http://127.0.0.1:1"), True),
        (ConnectionResetError("reset"), True),
        (TimeoutError("slow"), True),
        (OSError("503 Slow Down"), True),
        (FileNotFoundError("gone"), False),
        (PermissionError("Access Denied"), False),
        (UnsafePathError("../x"), False),
        (ValueError("bad"), False),
    ],
)
def test_transient_storage_errors_are_told_from_final_ones(error: BaseException, transient: bool) -> None:
    assert is_transient_storage_error(error) is transient


def test_the_configured_memory_root_uses_the_endpoint_setting(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CODEX_MEMORIES_S3_ENDPOINT_URL", "http://127.0.0.1:1")
    config = load_runtime_config(codex_home=tmp_path, memory_root="s3://bucket/memories")

    root = memory_root(config)

    assert isinstance(root, FsspecMemoryRoot) and root.url == "s3://bucket/memories"
    assert root._fs.client_kwargs == {"endpoint_url": "http://127.0.0.1:1"}
