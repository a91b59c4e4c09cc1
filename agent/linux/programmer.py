"""LinuxDatapath: reconcile one network namespace to a DesiredDatapath, idempotently.

Each ``apply`` reads what the agent owns in the kernel (see agent.linux.ownership),
compares it with the desired state, and changes only the difference; it returns a
list of human-readable changes, empty when the kernel already matched. ``cleanup``
removes everything the agent owns (the agent's ``--cleanup`` on stop).
"""

from __future__ import annotations

import logging
from typing import Any

from agent.errors import WireGuardError
from agent.linux import netlink
from agent.linux.netlink import open_netlink
from agent.linux.nft import reconcile_nft, remove_nft
from agent.linux.ownership import ALIAS_PREFIX, ALIAS_WIREGUARD
from agent.linux.policy_nft import reconcile_policy_nft
from agent.linux.routing import reconcile_routes, reconcile_rules
from agent.linux.spread import reconcile_spread
from agent.linux.tunnel import (
    StalePeers,
    ensure_link_tagged_up,
    reconcile_peers,
    reconcile_tunnel,
    remove_stale_peers,
)
from agent.linux.wireguard import WireGuardDaemons, configure
from agent.state import DesiredDatapath, Role

log = logging.getLogger(__name__)

_EMPTY = DesiredDatapath(role=Role.DISABLED)


class LinuxDatapath:
    """The kernel of one network namespace (``netns`` None: the agent's own)."""

    def __init__(
        self,
        netns: str | None = None,
        *,
        wireguard_private_key: str | None = None,
        managed_link_names: tuple[str, ...] = (),
    ) -> None:
        """``managed_link_names``: the configured device names, removed by cleanup even if
        a crash left them untagged."""
        self.netns = netns
        self._private_key = wireguard_private_key
        self._managed_names = frozenset(managed_link_names)
        self._daemons = WireGuardDaemons()

    async def apply(self, desired: DesiredDatapath) -> list[str]:
        """Reconcile the namespace to ``desired``; returns the changes made."""
        changes: list[str] = []
        async with open_netlink(self.netns) as ipr:
            indexes: dict[str, int] = {}
            if desired.tunnel is not None:
                indexes[desired.tunnel.name] = await reconcile_tunnel(ipr, self.netns, desired.tunnel, changes)
            if desired.wireguard is not None:
                indexes[desired.wireguard.name] = await self._ensure_wireguard(ipr, desired, changes)
            await self._remove_stale_links(ipr, keep=frozenset(indexes), changes=changes)
            stale = StalePeers()
            if desired.tunnel is not None:
                stale = await reconcile_peers(ipr, indexes[desired.tunnel.name], desired.tunnel_peers, changes)
            # The nft tables before the routes: a remote range newly routed must meet its SNAT (and
            # its identity tagging) from its first packet, or a connection started in between
            # keeps its untranslated source for its life.
            await reconcile_nft(self.netns, desired, changes)
            await reconcile_policy_nft(self.netns, desired.policy, changes)
            await reconcile_routes(ipr, desired.routes, indexes, changes)
            await reconcile_rules(ipr, desired.rules, changes)
            # A replaced Gateway's neighbour and FDB entries go only now that no route leads to it.
            if desired.tunnel is not None:
                await remove_stale_peers(ipr, indexes[desired.tunnel.name], stale, changes)
        await reconcile_spread(self.netns, desired.spread, changes)
        if changes:
            log.info("datapathReconciled", extra={"netns": self.netns, "role": desired.role.value, "changes": changes})
        return changes

    async def cleanup(self) -> list[str]:
        """Remove every link, route, rule, neighbour and nft table the agent owns (the policy
        table goes with the empty desired state)."""
        changes = await self.apply(_EMPTY)
        await remove_nft(self.netns, changes)
        await self._daemons.stop_all()
        return changes

    async def _ensure_wireguard(self, ipr: Any, desired: DesiredDatapath, changes: list[str]) -> int:
        device = desired.wireguard
        assert device is not None
        if self._private_key is None:
            raise WireGuardError("WireGuard is wanted but the agent has no private key", temporary=False)
        if await netlink.link_index(ipr, device.name) is None:
            await self._daemons.start(self.netns, device.name)
            changes.append(f"start wireguard-go {device.name}")
        await configure(self.netns, device, self._private_key, changes)
        return await ensure_link_tagged_up(ipr, self.netns, device.name, ALIAS_WIREGUARD, changes)

    async def _remove_stale_links(self, ipr: Any, *, keep: frozenset[str], changes: list[str]) -> None:
        for link in await netlink.collect("dump links", ipr.link("dump")):
            name = link.get("ifname")
            alias = link.get("ifalias") or ""
            ours = alias.startswith(ALIAS_PREFIX) or (
                name in self._managed_names and netlink.link_kind(link) in {"vxlan", "tun"}
            )
            if not ours or name in keep:
                continue
            if alias == ALIAS_WIREGUARD or netlink.link_kind(link) == "tun":
                # Stopping wireguard-go removes its TUN device with it.
                await self._daemons.stop(name)
            await netlink.delete(f"delete link {name}", ipr.link("del", index=link["index"]))
            changes.append(f"delete link {name}")
