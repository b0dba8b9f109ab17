"""Save the results storage a team's workers share as the Prefect block `codex-memories-results`.

    PREFECT_API_URL=... python infra/shared_results.py s3://codex-memories/prefect-results
    PREFECT_API_URL=... python infra/shared_results.py /mnt/shared/prefect-results   # one machine, or NFS

It prints `PREFECT_RESULTS_DEFAULT_STORAGE_BLOCK=<block>`: put that in every worker's environment.
A retried flow run reads back the claims and the model answers its earlier attempt persisted from
there, whichever worker ran that attempt (infra/README.md, "Several workers"). An `s3://` location
is a `RemoteFileSystem` block (s3fs, as the memory root): the endpoint is taken from
`AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL` here if set; the keys are never stored in the block,
each worker reads them from its AWS environment. A path is a `LocalFileSystem` block. Saving again
replaces the block.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

BLOCK_NAME = "codex-memories-results"


def save_results_block(location: str) -> str:
    """Save the block for `location`; returns the value of PREFECT_RESULTS_DEFAULT_STORAGE_BLOCK."""
    from prefect.filesystems import LocalFileSystem, RemoteFileSystem

    if "://" in location:
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        settings = {"client_kwargs": {"endpoint_url": endpoint}} if location.startswith("s3://") and endpoint else {}
        block: LocalFileSystem | RemoteFileSystem = RemoteFileSystem(basepath=location.rstrip("/"), settings=settings)
    else:
        folder = Path(location).expanduser().resolve()
        folder.mkdir(parents=True, exist_ok=True)
        block = LocalFileSystem(basepath=str(folder))
    block.save(BLOCK_NAME, overwrite=True)
    return f"{block.get_block_type_slug()}/{BLOCK_NAME}"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(f"PREFECT_RESULTS_DEFAULT_STORAGE_BLOCK={save_results_block(argv[1])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
