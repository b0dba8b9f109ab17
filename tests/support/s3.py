"""An S3 endpoint for tests: moto's threaded server on 127.0.0.1 (s3fs talks real HTTP to it).

moto's in-process `mock_aws` does not intercept s3fs's aiobotocore client, the threaded server
does. Credentials are fake and recognisable (`PLANTED_SECRET_KEY`), so a test can grep logs and
artifacts for them. The server keeps its buckets across `stop()`/`start()` (moto's state is per
process), which the retry tests use to simulate an outage.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

PLANTED_ACCESS_KEY_ID = "AKIACODEXMEMORIESTEST"
PLANTED_SECRET_KEY = "planted-secret-key-8b1f2c9e-do-not-log"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class S3Endpoint:
    url: str
    port: int
    server: object

    def stop(self) -> None:
        self.server.stop()

    def restart(self) -> None:
        from moto.server import ThreadedMotoServer

        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self.server.start()

    def filesystem(self):
        import s3fs

        return s3fs.S3FileSystem(client_kwargs={"endpoint_url": self.url}, skip_instance_cache=True)

    def new_bucket(self) -> str:
        name = f"test-{uuid.uuid4().hex[:12]}"
        self.filesystem().mkdir(name)
        return name


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[S3Endpoint]:
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = S3Endpoint(url=f"http://127.0.0.1:{port}", port=port, server=server)
    try:
        yield endpoint
    finally:
        endpoint.server.stop()


@pytest.fixture
def s3(moto_endpoint: S3Endpoint, monkeypatch: pytest.MonkeyPatch) -> S3Endpoint:
    """The moto endpoint, with the AWS environment (fake keys) and our endpoint setting set."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", PLANTED_ACCESS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", PLANTED_SECRET_KEY)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("CODEX_MEMORIES_S3_ENDPOINT_URL", moto_endpoint.url)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    return moto_endpoint
