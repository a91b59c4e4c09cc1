"""Child process of the sqlite crash test: commit batches until killed.

Usage: python -m tests.contract.sqlite_crash_writer <data_dir>

Batch n puts the export and the import of Service default/svc-<n>; after
`commit` returns, the child prints "<n> <revision>" and flushes, so every
line the parent reads is an acknowledged batch.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from hub.store.base import WriteBatch
from hub.store.sqlite import SqliteStore
from tests.contract import samples


def batch_number(n: int) -> WriteBatch:
    return WriteBatch(
        put_exports=[samples.service_export("east", "default", f"svc-{n}")],
        put_imports=[samples.service_import("default", f"svc-{n}")],
    )


async def commit_forever(data_dir: Path) -> None:
    store = SqliteStore(data_dir)
    await store.open()
    for n in range(sys.maxsize):
        revision = await store.commit(batch_number(n))
        sys.stdout.write(f"{n} {revision}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(commit_forever(Path(sys.argv[1])))
