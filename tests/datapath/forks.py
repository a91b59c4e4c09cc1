"""Recording Python-level forks (``os.fork`` and everything built on it: multiprocessing's
'fork' context, pyroute2's helper processes) while a block runs.

A fork without exec in a process where gRPC (or any other) threads run leaves the child
with locks held by threads that no longer exist; gRPC's fork handlers abort such a child.
``subprocess`` / ``asyncio.create_subprocess_exec`` are not recorded: they fork (or vfork)
in C and exec at once, running no Python in the child, which is safe.

``os.register_at_fork`` hooks cannot be removed, so one hook is registered on import and
records only while a ForkRecorder is active.
"""

from __future__ import annotations

import os
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class ForkRecorder:
    forks: list[str] = field(default_factory=list)
    """One entry per fork: the live thread names and the stack that forked."""


_active: list[ForkRecorder] = []


def _before_fork() -> None:
    if not _active:
        return
    threads = ", ".join(sorted(t.name for t in threading.enumerate()))
    where = "".join(traceback.format_stack(limit=12)[:-1])
    for recorder in _active:
        recorder.forks.append(f"fork with threads [{threads}] from:\n{where}")


os.register_at_fork(before=_before_fork)


@contextmanager
def recording_forks() -> Iterator[ForkRecorder]:
    recorder = ForkRecorder()
    _active.append(recorder)
    try:
        yield recorder
    finally:
        _active.remove(recorder)
