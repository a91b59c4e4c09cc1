"""One hub per data directory.

Two hubs writing one database would each count revisions in memory and
hand out the same revision twice. An advisory flock on `<data_dir>/hub.lock`
makes the second one fail at open; the kernel drops the lock when the
holder dies, even by SIGKILL, so a crash never leaves a stale lock.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from hub.store.base import StoreError

LOCK_FILE = "hub.lock"


class DataDirLocked(StoreError):
    """Another process (or store instance) already holds this data directory."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(f"{data_dir} is in use by another hub; stop it or use another --data-dir")
        self.data_dir = data_dir


class DataDirLock:
    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise DataDirLocked; blocking file I/O, call off the loop."""
        fd = os.open(self._data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataDirLocked(self._data_dir) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
