"""Running things inside a named network namespace (None = the agent's own), without forking.

Two ways, each for what it does best:

* executables (``nft``, ``wg``, ``wireguard-go``) through ``ip netns exec``, started with
  asyncio's subprocess support;
* Python calls (sysctl writes, creating sockets: the netlink socket of agent.linux.netlink,
  the health prober's UDP sockets) on a fresh thread that setns() into the namespace and
  back. The network namespace is a property of each thread, so setns on that thread moves
  nothing else, and a socket stays bound to the namespace it was created in: the event
  loop then drives it from its own thread like any other socket.

Why fork-free: the agent shares its process with gRPC (the hub session, the kube client)
and asyncio's threads. A fork that goes on running Python (``os.fork``, multiprocessing's
'fork' context, pyroute2's ``netns=``/``NetNS`` helper process) copies the process with
locks held by threads that do not exist in the child; gRPC's fork handlers then abort the
child ("Fatal Python error: Aborted"), and the parent sees its helper die. A subprocess is
safe: it forks (or vforks) in C and execs at once, running no Python and no gRPC code in
the child. So the agent never calls ``os.fork`` itself, and pyroute2 never gets a
namespace name (see agent.linux.netlink). tests/datapath/test_fork_free.py and the
datapath suite's fork guard (tests/datapath/forks.py) hold it to that.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import os
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from agent.errors import DatapathError, SysctlError, ToolMissingError

NETNS_DIR = Path("/var/run/netns")
_CLONE_NEWNET = 0x40000000
# A container runtime mounts /proc/sys read-only in every container that is not privileged
# (containerd, CRI-O and Docker alike), whatever its capabilities: EROFS, or EACCES/EPERM
# under some security modules.
_NOT_WRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM}
_T = TypeVar("_T")


@dataclass(frozen=True)
class CommandResult:
    """Outcome of one executable run."""

    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def describe(self) -> str:
        detail = self.stderr.decode(errors="replace").strip() or self.stdout.decode(errors="replace").strip()
        return f"{' '.join(self.argv)} exited {self.returncode}: {detail[:2000]}"


def netns_argv(netns: str | None, argv: Sequence[str]) -> list[str]:
    """argv prefixed so that it runs inside ``netns``."""
    return ["ip", "netns", "exec", netns, *argv] if netns else list(argv)


async def run_command(
    netns: str | None, argv: Sequence[str], *, stdin: bytes | None = None, time_limit: float = 15.0
) -> CommandResult:
    """Run an executable in the namespace and collect its output (never raises on exit codes)."""
    for tool in {"ip" if netns else argv[0], argv[0]}:
        if shutil.which(tool) is None:
            raise ToolMissingError(tool)
    full = netns_argv(netns, argv)
    proc = await asyncio.create_subprocess_exec(
        *full,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    # asyncio.timeout, not wait_for: Python 3.11's wait_for loses a cancellation that arrives
    # as the command ends, and the agent being stopped then never stops (seen in CI).
    try:
        async with asyncio.timeout(time_limit):
            out, err = await proc.communicate(stdin)
    except TimeoutError as exc:
        proc.kill()
        await proc.wait()
        raise DatapathError(f"{' '.join(full)} timed out after {time_limit}s") from exc
    assert proc.returncode is not None
    return CommandResult(tuple(full), proc.returncode, out, err)


def call_in_netns(netns: str | None, fn: Callable[[], _T]) -> _T:
    """Call ``fn`` with the network namespace switched to ``netns`` (blocking)."""
    if netns is None:
        return fn()
    box: dict[str, object] = {}

    def target() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            with open("/proc/thread-self/ns/net", "rb") as own, open(NETNS_DIR / netns, "rb") as wanted:
                _setns(libc, wanted.fileno())
                try:
                    box["result"] = fn()
                finally:
                    _setns(libc, own.fileno())
        except BaseException as err:  # handed to the caller's thread below
            box["error"] = err

    thread = threading.Thread(target=target, name=f"netns-{netns}", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]  # type: ignore[return-value]


async def async_call_in_netns(netns: str | None, fn: Callable[[], _T]) -> _T:
    """call_in_netns without blocking the event loop."""
    return await asyncio.to_thread(call_in_netns, netns, fn)


def write_sysctl(netns: str | None, key: str, value: str) -> bool:
    """Set a sysctl (slash path) if it differs; returns whether it was changed.

    SysctlError (permanent) when /proc/sys is not writable here; a missing key is the
    caller's FileNotFoundError."""
    path = "/proc/sys/" + key

    def apply() -> bool:
        current = Path(path).read_text().strip()
        if current == value:
            return False
        Path(path).write_text(value)
        return True

    try:
        return call_in_netns(netns, apply)
    except OSError as err:
        if err.errno not in _NOT_WRITABLE:
            raise
        code = errno.errorcode.get(err.errno, str(err.errno))
        raise SysctlError(
            f"cannot set {path} to {value} ({code}: {err.strerror}): the agent needs a writable /proc/sys,"
            " which container runtimes give only to a privileged container (securityContext.privileged: true)",
            temporary=False,
        ) from err


def _setns(libc: ctypes.CDLL, fd: int) -> None:
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"setns: {os.strerror(errno)}")
