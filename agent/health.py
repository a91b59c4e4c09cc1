"""Gateway health beyond Antrea: the active Gateway probes every remote Gateway.

Protocol: UDP echo on the agent's own port (config ``health.port``). A probe is 13
bytes, ``MCHP`` + ``Q`` + a 64-bit sequence number; the responder (every agent runs
one) answers the same bytes with ``R``. UDP echo rather than ICMP because it needs no
raw socket nor ping_group_range, and it travels the same underlay path (UDP to the
Gateway IP) as the VXLAN/WireGuard outer packets. After an unanswered echo the next
probe also knocks on the Gateway's kernel (below), and either answer counts: the remote
datapath lives in its kernel, so a remote agent restarting (a rolling update: a second
or two without a responder) is not a lost link, while a dead Node or a cut link answers
neither and is UNREACHABLE as soon as before. Where a firewall lets only UDP through,
the knock goes unanswered and the echo alone decides, as it did.

A candidate Node probes its own cluster's Gateway by its kernel instead (``ProbeTarget.by_kernel``):
a TCP SYN to the same port, where any answer (the RST of a closed port, or a connection) is an
answer; the Gateway's datapath is in its kernel and outlives its agent's restart. A remote
Gateway this Node stopped sending to (``ProbeTarget.standby``, agent.desired) is probed by echo
alone: only its agent answering brings it back, not a kernel whose datapath may not be yet.

Verdict: every ``interval`` one probe per Gateway; a probe not answered before
the next one is a miss; ``miss_threshold`` consecutive misses make the Gateway
UNREACHABLE, any answer makes it REACHABLE again (UNKNOWN until the first verdict).
The result is plain data (PeerHealth) for the kube wiring to publish.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import socket
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, cast

from agent.linux.netns import async_call_in_netns
from agent.state import ProbeTarget
from kube.kernel_probe import knock
from kube.waiting import cancel_and_wait

log = logging.getLogger(__name__)

_MAGIC = b"MCHP"
_REQUEST = b"Q"
_REPLY = b"R"
_FORMAT = struct.Struct("!4ssQ")


class Reachability(enum.Enum):
    UNKNOWN = "Unknown"
    REACHABLE = "Reachable"
    UNREACHABLE = "Unreachable"


@dataclass(frozen=True)
class PeerHealth:
    """What the active Gateway knows about one remote Gateway."""

    cluster_id: str
    gateway_ip: str
    reachability: Reachability
    rtt_seconds: float | None
    """Round trip of the last answered probe."""
    consecutive_misses: int
    changed_at: datetime
    """When ``reachability`` last changed (UTC)."""
    misses: int = 0
    """Every unanswered probe since probing began: a miss that changes no verdict moves it too."""


HealthCallback = Callable[[PeerHealth], None]


def encode_probe(kind: bytes, seq: int) -> bytes:
    return _FORMAT.pack(_MAGIC, kind, seq)


def decode_probe(data: bytes) -> tuple[bytes, int] | None:
    if len(data) != _FORMAT.size:
        return None
    magic, kind, seq = _FORMAT.unpack(data)
    if magic != _MAGIC or kind not in (_REQUEST, _REPLY):
        return None
    return kind, seq


class _Endpoint(asyncio.DatagramProtocol):
    def __init__(self, on_datagram: Callable[[bytes, Any], None]) -> None:
        self._on_datagram = on_datagram
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # The selector loop's datagram transport does not subclass DatagramTransport.
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self._on_datagram(data, addr)


async def _open_udp(netns: str | None, port: int, on_datagram: Callable[[bytes, Any], None]) -> _Endpoint:
    sock = await async_call_in_netns(netns, lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("0.0.0.0", port))
        sock.setblocking(False)
        _, protocol = await asyncio.get_running_loop().create_datagram_endpoint(
            lambda: _Endpoint(on_datagram), sock=sock
        )
    except BaseException:
        sock.close()
        raise
    return protocol


class ProbeResponder:
    """Answers probes on ``port`` inside ``netns``."""

    def __init__(self, netns: str | None, port: int) -> None:
        self._netns = netns
        self._port = port
        self._endpoint: _Endpoint | None = None

    async def start(self) -> None:
        self._endpoint = await _open_udp(self._netns, self._port, self._answer)

    def _answer(self, data: bytes, addr: Any) -> None:
        decoded = decode_probe(data)
        if decoded is None or decoded[0] != _REQUEST or self._endpoint is None or self._endpoint.transport is None:
            return
        self._endpoint.transport.sendto(encode_probe(_REPLY, decoded[1]), addr)

    def close(self) -> None:
        if self._endpoint is not None and self._endpoint.transport is not None:
            self._endpoint.transport.close()
        self._endpoint = None


@dataclass
class _PeerState:
    health: PeerHealth
    seq: int = 0
    sent_at: float | None = None
    answered: bool = True
    by_kernel: bool = False
    standby: bool = False  # echo only: see ProbeTarget.standby


class GatewayProber:
    """Probes a set of remote Gateways from ``netns`` until cancelled."""

    def __init__(
        self,
        netns: str | None,
        *,
        port: int,
        interval: float = 1.0,
        miss_threshold: int = 5,
        on_change: HealthCallback | None = None,
    ) -> None:
        self._netns = netns
        self._port = port
        self._interval = interval
        self._threshold = miss_threshold
        self._on_change = on_change
        self._peers: dict[str, _PeerState] = {}
        self._by_ip: dict[str, str] = {}
        self._endpoint: _Endpoint | None = None
        self._next_seq = 1
        self._knocks: set[asyncio.Task[None]] = set()  # kernel probes under way

    def set_targets(self, targets: Iterable[ProbeTarget]) -> None:
        """Probe exactly these Gateways; a Gateway whose IP changed starts over as UNKNOWN."""
        wanted = {t.key: t for t in targets}
        for key in list(self._peers):
            state = self._peers[key]
            target = wanted.get(key)
            probed = (state.health.gateway_ip, state.by_kernel, state.standby)
            if target is None or (str(target.gateway_ip), target.by_kernel, target.standby) != probed:
                del self._peers[key]
        for key, target in wanted.items():
            if key not in self._peers:
                now = datetime.now(UTC)
                health = PeerHealth(target.cluster_id, str(target.gateway_ip), Reachability.UNKNOWN, None, 0, now)
                self._peers[key] = _PeerState(health, by_kernel=target.by_kernel, standby=target.standby)
        self._by_ip = {state.health.gateway_ip: key for key, state in self._peers.items()}

    def snapshot(self) -> dict[str, PeerHealth]:
        """Current health by ProbeTarget.key: a remote cluster's ID, or our own Gateways' cluster/IP."""
        return {cid: state.health for cid, state in self._peers.items()}

    async def run(self) -> None:
        """Probe every ``interval`` until cancelled."""
        self._endpoint = await _open_udp(self._netns, 0, self._received)
        loop = asyncio.get_running_loop()
        try:
            next_tick = loop.time()
            while True:
                now = loop.time()
                self._tick(now)
                # After the loop was held up (a busy Node, a long step elsewhere in the agent), the
                # ticks it missed are skipped, not fired back to back: each would count the probe
                # just sent as a miss before any answer could be read, and a one-second stall
                # would declare a Gateway that answers all along unreachable.
                next_tick = max(next_tick + self._interval, now + self._interval / 2)
                await asyncio.sleep(max(0.0, next_tick - loop.time()))
        finally:
            await cancel_and_wait(*self._knocks)
            if self._endpoint.transport is not None:
                self._endpoint.transport.close()
            self._endpoint = None

    def _tick(self, now: float) -> None:
        for state in self._peers.values():
            if not state.answered:
                misses = state.health.consecutive_misses + 1
                verdict = Reachability.UNREACHABLE if misses >= self._threshold else state.health.reachability
                state.health = replace(state.health, misses=state.health.misses + 1)
                self._update(state, reachability=verdict, consecutive_misses=misses)
            state.seq = self._next_seq
            self._next_seq += 1
            state.sent_at = now
            state.answered = False
            self._send(state)

    def _send(self, state: _PeerState) -> None:
        if state.by_kernel or (state.health.consecutive_misses and not state.standby):
            task = asyncio.get_running_loop().create_task(self._knock(state, state.seq))
            self._knocks.add(task)
            task.add_done_callback(self._knocks.discard)
            if state.by_kernel:
                return
        if self._endpoint is None or self._endpoint.transport is None:
            return
        try:
            self._endpoint.transport.sendto(encode_probe(_REQUEST, state.seq), (state.health.gateway_ip, self._port))
        except OSError as err:  # e.g. no route: counts as a miss at the next tick
            log.debug("probeSendFailed", extra={"gatewayIP": state.health.gateway_ip, "error": str(err)})

    async def _knock(self, state: _PeerState, seq: int) -> None:
        """A TCP SYN to the Gateway's probe port; any answer before the next probe is one."""
        if self._netns is None:  # the agent's own (host) namespace: no thread hop before the SYN
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        else:
            sock = await async_call_in_netns(self._netns, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        sock.setblocking(False)
        if await knock(sock, state.health.gateway_ip, self._port, self._interval):
            self._answered(state, seq)  # else a miss at the next tick

    def _answered(self, state: _PeerState, seq: int) -> None:
        if state.answered or seq != state.seq or state.sent_at is None:
            return  # late answer to an older probe: already counted as a miss
        state.answered = True
        rtt = asyncio.get_running_loop().time() - state.sent_at
        self._update(state, reachability=Reachability.REACHABLE, consecutive_misses=0, rtt_seconds=rtt)

    def _received(self, data: bytes, addr: Any) -> None:
        decoded = decode_probe(data)
        cid = self._by_ip.get(addr[0])
        if decoded is None or decoded[0] != _REPLY or cid is None or addr[1] != self._port:
            return
        self._answered(self._peers[cid], decoded[1])

    def _update(
        self,
        state: _PeerState,
        *,
        reachability: Reachability,
        consecutive_misses: int,
        rtt_seconds: float | None = None,
    ) -> None:
        old = state.health
        changed = reachability is not old.reachability
        state.health = replace(
            old,
            reachability=reachability,
            consecutive_misses=consecutive_misses,
            rtt_seconds=rtt_seconds if rtt_seconds is not None else old.rtt_seconds,
            changed_at=datetime.now(UTC) if changed else old.changed_at,
        )
        if changed:
            log.info(
                "remoteGatewayReachability",
                extra={"clusterID": old.cluster_id, "gatewayIP": old.gateway_ip, "reachability": reachability.value},
            )
            if self._on_change is not None:
                self._on_change(state.health)
