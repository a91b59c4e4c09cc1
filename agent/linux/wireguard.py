"""The Gateway's WireGuard device: userspace wireguard-go, configured with ``wg``.

The kernel here has no WireGuard module, so the device is a TUN run by ``wireguard-go
-f <name>`` started inside the namespace (``-f``: stay in the foreground, so the
process we start is the daemon and we can reap it; never WG_PROCESS_FOREGROUND=0).
Its UAPI socket is ``/var/run/wireguard/<name>.sock``, and that directory is shared by
every namespace: a device name must be unique on the machine. Before starting a device
we therefore check that no live daemon already owns the name (elsewhere it would be
another namespace's device), and we find a daemon to stop through the socket's peer
credentials (SO_PEERCRED), which works even for a daemon a previous agent started.

Configuration is idempotent: ``wg show <name> dump`` is compared with the desired
private key, listen port and peers, and only a difference triggers ``wg syncconf``
(fed on stdin, so the private key never touches the disk).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import struct
from dataclasses import dataclass
from pathlib import Path

from agent.errors import ToolMissingError, WireGuardError
from agent.linux.netns import netns_argv, run_command
from agent.state import WireGuardDevice

WG_RUN_DIR = Path("/var/run/wireguard")
_START_DEADLINE = 5.0
_STOP_DEADLINE = 5.0
_POLL = 0.02


@dataclass(frozen=True)
class WireGuardSnapshot:
    """What ``wg show dump`` reports, reduced to what we configure."""

    private_key: str
    listen_port: int
    peers: frozenset[tuple[str, str, frozenset[str]]]
    """(public key, endpoint "ip:port", allowed IPs)."""


def socket_path(name: str) -> Path:
    return WG_RUN_DIR / f"{name}.sock"


def socket_owner_pid(name: str) -> int | None:
    """PID of the live daemon serving ``name``'s UAPI socket, None if nobody does."""
    path = socket_path(name)
    if not path.exists():
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return None
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, _uid, _gid = struct.unpack("3i", creds)
    return int(pid)


class WireGuardDaemons:
    """The wireguard-go processes this agent started (so that it can reap them)."""

    def __init__(self) -> None:
        self._children: dict[str, asyncio.subprocess.Process] = {}

    async def start(self, netns: str | None, name: str) -> None:
        """Start wireguard-go for ``name`` in ``netns`` and wait until its socket answers."""
        if shutil.which("wireguard-go") is None:
            raise ToolMissingError("wireguard-go")
        owner = socket_owner_pid(name)
        if owner is not None:
            raise WireGuardError(
                f"WireGuard device name {name} is already served by pid {owner} (in another namespace?);"
                " interface names must be unique across namespaces",
                temporary=False,
            )
        with contextlib.suppress(FileNotFoundError):
            socket_path(name).unlink()  # stale: no daemon behind it
        env = {k: v for k, v in os.environ.items() if k != "WG_PROCESS_FOREGROUND"}
        env["LOG_LEVEL"] = "error"
        proc = await asyncio.create_subprocess_exec(
            *netns_argv(netns, ["wireguard-go", "-f", name]),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,  # survives the agent's terminal signals; stopped explicitly
        )
        self._children[name] = proc
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _START_DEADLINE
        while socket_owner_pid(name) is None:
            if proc.returncode is not None:
                err = await proc.stderr.read() if proc.stderr else b""
                self._children.pop(name, None)
                raise WireGuardError(f"wireguard-go {name} exited {proc.returncode}: {err.decode(errors='replace')}")
            if loop.time() > deadline:
                await self.stop(name)
                raise WireGuardError(f"wireguard-go {name} did not open its UAPI socket in {_START_DEADLINE}s")
            await asyncio.sleep(_POLL)

    async def stop(self, name: str) -> bool:
        """Stop the daemon serving ``name`` (ours or a previous agent's); True if one ran."""
        child = self._children.pop(name, None)
        pid = socket_owner_pid(name)
        stopped = False
        if child is not None and child.returncode is None:
            child.terminate()
            try:
                async with asyncio.timeout(_STOP_DEADLINE):
                    await child.wait()
            except TimeoutError:
                child.kill()
                await child.wait()
            stopped = True
        elif pid is not None:
            stopped = await _stop_foreign(pid)
        with contextlib.suppress(FileNotFoundError):
            if socket_owner_pid(name) is None:
                socket_path(name).unlink()
        return stopped

    async def stop_all(self) -> None:
        for name in list(self._children):
            await self.stop(name)


async def _stop_foreign(pid: int) -> bool:
    """SIGTERM a daemon we did not start, SIGKILL it if it lingers; never waits forever."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _STOP_DEADLINE
    while _alive(pid):
        if loop.time() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            break
        await asyncio.sleep(_POLL)
    return True


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return status.rsplit(")", 1)[-1].split()[0] != "Z"  # a zombie is dead, just not reaped


async def read_config(netns: str | None, name: str) -> WireGuardSnapshot:
    result = await run_command(netns, ["wg", "show", name, "dump"])
    if not result.ok:
        raise WireGuardError(result.describe())
    lines = result.stdout.decode().strip().splitlines()
    if not lines:
        raise WireGuardError(f"wg show {name} dump printed nothing")
    head = lines[0].split("\t")
    peers = set()
    for line in lines[1:]:
        fields = line.split("\t")
        allowed = frozenset() if fields[3] == "(none)" else frozenset(fields[3].split(","))
        peers.add((fields[0], fields[2], allowed))
    return WireGuardSnapshot(head[0], int(head[2]), frozenset(peers))


def desired_snapshot(device: WireGuardDevice, private_key: str) -> WireGuardSnapshot:
    peers = frozenset(
        (p.public_key, f"{p.endpoint}:{p.port}", frozenset(str(n) for n in p.allowed_ips)) for p in device.peers
    )
    return WireGuardSnapshot(private_key, device.listen_port, peers)


async def configure(netns: str | None, device: WireGuardDevice, private_key: str, changes: list[str]) -> None:
    """Bring the device's key, port and peers to ``device`` (no-op when they match)."""
    wanted = desired_snapshot(device, private_key)
    if await read_config(netns, device.name) == wanted:
        return
    lines = ["[Interface]", f"PrivateKey = {private_key}", f"ListenPort = {device.listen_port}"]
    for peer in sorted(device.peers, key=lambda p: p.public_key):
        lines += [
            "[Peer]",
            f"PublicKey = {peer.public_key}",
            f"Endpoint = {peer.endpoint}:{peer.port}",
            f"AllowedIPs = {', '.join(str(n) for n in peer.allowed_ips)}",
        ]
    result = await run_command(netns, ["wg", "syncconf", device.name, "/dev/stdin"], stdin="\n".join(lines).encode())
    if not result.ok:
        raise WireGuardError(result.describe())
    changes.append(f"configure wireguard {device.name} ({len(device.peers)} peers)")
