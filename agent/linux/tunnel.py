"""The VXLAN tunnel device and its permanent neighbour/FDB entries.

See agent.tunnel_mac for why one device with deterministic MACs carries L3 traffic to
many peers. The device is created without ``local``/``remote``/``dev`` so the kernel
picks the outer source by routing, learning is off (every entry is ours and permanent),
its MTU leaves room for the VXLAN headers, it carries one anchor address (see
agent.linux.ownership) and its sysctls let it forward decapsulated traffic
(forwarding=1) whose inner source is routed elsewhere (loose rp_filter).

Taking the device down (to change its MAC when the Gateway moves) flushes its routes
and neighbours; the programmer re-adds them in the same reconcile.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from typing import Any

from pyroute2.netlink.rtnl.ndmsg import states as nud_states

from agent.errors import NetlinkError
from agent.linux import netlink
from agent.linux.netns import write_sysctl
from agent.linux.ownership import ALIAS_TUNNEL, ANCHOR_ADDRESSES
from agent.state import TunnelDevice, TunnelPeer

_PERMANENT = nud_states["permanent"]
# Outer IPv4 (20) + UDP (8) + VXLAN (8) + inner Ethernet (14) headers. Without a lower
# device the kernel leaves a VXLAN device at 1500, which makes every full-size inner
# packet an IP-fragmented outer one.
VXLAN_OVERHEAD = 50
DEFAULT_UNDERLAY_MTU = 1500
_SCOPE_HOST = 254
# Applied to each of our devices: forward decapsulated packets; rp_filter 2 (loose)
# because decapsulated sources (remote Gateway IPs, local Pods behind other Nodes) are
# routed elsewhere than the tunnel for the Node's own traffic, which strict mode rejects.
DEVICE_SYSCTLS = {"forwarding": "1", "rp_filter": "2", "send_redirects": "0"}


async def reconcile_tunnel(ipr: Any, netns: str | None, device: TunnelDevice, changes: list[str]) -> int:
    """Make the VXLAN device match ``device``; returns its ifindex."""
    index = await netlink.link_index(ipr, device.name)
    if index is not None:
        link = (await netlink.call(f"get link {device.name}", ipr.link("get", index=index)))[0]
        if not _same_vxlan(link, device):
            await netlink.delete(f"delete link {device.name}", ipr.link("del", index=index))
            changes.append(f"delete mismatched link {device.name}")
            index = None
    if index is None:
        await netlink.call(
            f"add vxlan {device.name}",
            ipr.link(
                "add",
                ifname=device.name,
                kind="vxlan",
                vxlan_id=device.vni,
                vxlan_port=device.port,
                vxlan_learning=0,
                address=device.mac,
            ),
        )
        changes.append(f"add vxlan {device.name} vni {device.vni} port {device.port}")
        index = await netlink.link_index(ipr, device.name)
        assert index is not None
        link = (await netlink.call(f"get link {device.name}", ipr.link("get", index=index)))[0]
    await _ensure_link_state(ipr, index, link, device.name, alias=ALIAS_TUNNEL, mac=device.mac, changes=changes)
    mtu = device.mtu if device.mtu is not None else await _underlay_mtu(ipr, str(device.underlay_ip)) - VXLAN_OVERHEAD
    if link.get("mtu") != mtu:
        await netlink.call(f"mtu {device.name}", ipr.link("set", index=index, mtu=mtu))
        changes.append(f"set {device.name} mtu {mtu}")
    await ensure_anchor_address(ipr, index, device.name, ANCHOR_ADDRESSES[ALIAS_TUNNEL], changes)
    await ensure_device_sysctls(netns, device.name, changes)
    return index


async def _ensure_link_state(
    ipr: Any, index: int, link: Any, name: str, *, alias: str, mac: str | None, changes: list[str]
) -> None:
    if mac is not None and str(link.get("address")).lower() != mac:
        # A VXLAN device takes a new MAC only while down.
        await netlink.call(f"down {name}", ipr.link("set", index=index, state="down"))
        await netlink.call(f"set mac {name}", ipr.link("set", index=index, address=mac))
        changes.append(f"set {name} mac {mac}")
        link = (await netlink.call(f"get link {name}", ipr.link("get", index=index)))[0]
    if link.get("ifalias") != alias:
        await netlink.call(f"alias {name}", ipr.link("set", index=index, ifalias=alias))
        changes.append(f"set {name} alias {alias}")
    if not link["flags"] & 1:  # IFF_UP
        await netlink.call(f"up {name}", ipr.link("set", index=index, state="up"))
        changes.append(f"set {name} up")


async def _underlay_mtu(ipr: Any, underlay_ip: str) -> int:
    """MTU of the device holding the Node's InternalIP (1500 if it is not local)."""
    for msg in await netlink.collect("dump addr", ipr.addr("dump", family=socket.AF_INET)):
        if msg.get("address") == underlay_ip:
            link = (await netlink.call("get underlay link", ipr.link("get", index=msg["index"])))[0]
            return int(link.get("mtu"))
    return DEFAULT_UNDERLAY_MTU


async def ensure_link_tagged_up(ipr: Any, netns: str | None, name: str, alias: str, changes: list[str]) -> int:
    """Tag and bring up a device created elsewhere (wireguard-go); returns its ifindex."""
    index = await netlink.link_index(ipr, name)
    if index is None:
        raise NetlinkError(f"link {name} is missing")
    link = (await netlink.call(f"get link {name}", ipr.link("get", index=index)))[0]
    await _ensure_link_state(ipr, index, link, name, alias=alias, mac=None, changes=changes)
    await ensure_anchor_address(ipr, index, name, ANCHOR_ADDRESSES[alias], changes)
    await ensure_device_sysctls(netns, name, changes)
    return index


async def ensure_anchor_address(ipr: Any, index: int, name: str, address: str, changes: list[str]) -> None:
    """Exactly one IPv4 address on the device: ``address``/32 scope host (see ownership)."""
    present = await netlink.collect(f"dump addr {name}", ipr.addr("dump", index=index, family=socket.AF_INET))
    found = False
    for msg in present:
        if msg["index"] != index:
            continue
        if msg.get("address") == address and msg["prefixlen"] == 32 and msg["scope"] == _SCOPE_HOST:
            found = True
            continue
        await netlink.delete(
            f"del addr {name}", ipr.addr("del", index=index, address=msg.get("address"), prefixlen=msg["prefixlen"])
        )
        changes.append(f"del addr {msg.get('address')} dev {name}")
    if not found:
        await netlink.call(
            f"add addr {name}", ipr.addr("add", index=index, address=address, prefixlen=32, scope=_SCOPE_HOST)
        )
        changes.append(f"add addr {address}/32 scope host dev {name}")


async def ensure_device_sysctls(netns: str | None, name: str, changes: list[str]) -> None:
    for key, value in DEVICE_SYSCTLS.items():
        path = f"net/ipv4/conf/{name}/{key}"
        if await asyncio.to_thread(write_sysctl, netns, path, value):
            changes.append(f"sysctl {path}={value}")
    # The devices carry IPv4 only; without this they would send IPv6 ND/MLD that no
    # FDB entry can deliver. Absent when the host has IPv6 disabled altogether.
    path = f"net/ipv6/conf/{name}/disable_ipv6"
    try:
        if await asyncio.to_thread(write_sysctl, netns, path, "1"):
            changes.append(f"sysctl {path}=1")
    except FileNotFoundError:
        pass


@dataclass(frozen=True)
class StalePeers:
    """Neighbour and FDB entries of the device that no peer wants any more."""

    neighbours: tuple[str, ...] = ()
    fdb: tuple[tuple[str, str], ...] = ()
    """(MAC, underlay IP)."""


async def reconcile_peers(ipr: Any, index: int, peers: tuple[TunnelPeer, ...], changes: list[str]) -> StalePeers:
    """The permanent neighbour and FDB entries of ``peers`` on the device; returns those no peer
    wants, for ``remove_stale_peers`` once the routes no longer lead to them: a packet routed to a
    Gateway that is being replaced (a remote cluster's Gateway moved) must still find its entries
    until its route moves, or the tunnel drops it (the SYN of a request, lost)."""
    wanted_neigh = {str(p.underlay_ip): p.mac for p in peers}
    wanted_fdb = {(p.mac, str(p.underlay_ip)) for p in peers}
    stale_neighbours: list[str] = []
    neighbours = await netlink.collect("dump neigh", ipr.neigh("dump", ifindex=index, family=socket.AF_INET))
    for msg in neighbours:
        ip, mac = msg.get("dst"), str(msg.get("lladdr")).lower()
        if msg["ifindex"] != index:
            continue
        if wanted_neigh.get(ip) == mac and msg["state"] & _PERMANENT:
            wanted_neigh.pop(ip)
            continue
        if ip not in wanted_neigh:
            stale_neighbours.append(str(ip))
    for ip, mac in wanted_neigh.items():
        await netlink.call(f"neigh {ip}", ipr.neigh("replace", dst=ip, lladdr=mac, ifindex=index, state=_PERMANENT))
        changes.append(f"set neigh {ip} {mac}")
    stale_fdb: list[tuple[str, str]] = []
    entries = await netlink.collect("dump fdb", ipr.fdb("dump", ifindex=index))
    for msg in entries:
        if msg["ifindex"] != index or msg.get("dst") is None:
            continue
        key = (str(msg.get("lladdr")).lower(), str(msg.get("dst")))
        if key in wanted_fdb:
            wanted_fdb.discard(key)
            continue
        stale_fdb.append(key)
    for mac, ip in sorted(wanted_fdb):
        await netlink.call(f"fdb {mac}", ipr.fdb("append", ifindex=index, lladdr=mac, dst=ip, state=_PERMANENT))
        changes.append(f"add fdb {mac} dst {ip}")
    return StalePeers(tuple(stale_neighbours), tuple(stale_fdb))


async def remove_stale_peers(ipr: Any, index: int, stale: StalePeers, changes: list[str]) -> None:
    for ip in stale.neighbours:
        await netlink.delete(f"del neigh {ip}", ipr.neigh("del", dst=ip, ifindex=index))
        changes.append(f"del neigh {ip}")
    for mac, ip in stale.fdb:
        deleting = ipr.fdb("del", ifindex=index, lladdr=mac, dst=ip, state=_PERMANENT)
        await netlink.delete(f"del fdb {(mac, ip)}", deleting)
        changes.append(f"del fdb {mac} dst {ip}")


def _same_vxlan(link: Any, device: TunnelDevice) -> bool:
    if netlink.link_kind(link) != "vxlan":
        return False
    data = link.get("linkinfo").get("data")
    return bool(
        data is not None
        and data.get("vxlan_id") == device.vni
        and data.get("vxlan_port") == device.port
        and not data.get("vxlan_learning")
    )
