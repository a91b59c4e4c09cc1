"""AddressBook: which global address each exported Service and Pod holds (pure).

Addresses are handed out lowest first from the member's block (mcapi.global_addresses.assignable:
never the network, broadcast or egress address). Each ServiceExport (its owner key) holds the
addresses of its Service (``service:<ns>/<name>``, endpointIPType ClusterIP) or of its Pods'
IPs (``pod:<IP>``, PodIP and Headless); a Pod behind two exported Services holds one address, freed
when the last of them lets go. An owner gets all the addresses it asks for or none
(``Exhausted``): an export is never half translated.

A book starts from the member's record (ConfigMap mchub-global-addresses): the addresses it
names are held for their keys until ``forget_unclaimed`` (after the member looked at every
ServiceExport once), so a restart gives every Service and Pod the address it had.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network

from mcapi.global_addresses import GlobalAddresses, assignable, parse_block

SERVICE = "service:"
POD = "pod:"


def service_key(namespace: str, name: str) -> str:
    return f"{SERVICE}{namespace}/{name}"


def pod_key(ip: str) -> str:
    return f"{POD}{ip}"


class Exhausted(Exception):
    """The block has fewer free addresses than an owner needs."""

    def __init__(self, block: IPv4Network, needed: int, free: int) -> None:
        super().__init__(
            f"global CIDR {block} has {free} free address{'es' if free != 1 else ''}, "
            f"{needed} more {'are' if needed != 1 else 'is'} needed"
        )
        self.block = block
        self.needed = needed
        self.free = free


@dataclass
class AddressBook:
    block: IPv4Network
    _by_key: dict[str, IPv4Address] = field(default_factory=dict)
    _owners: dict[Hashable, frozenset[str]] = field(default_factory=dict)
    _holders: dict[str, set[Hashable]] = field(default_factory=dict)
    _unclaimed: set[str] = field(default_factory=set)
    """Keys the record named that no owner asked for yet."""

    @classmethod
    def from_record(cls, block: IPv4Network, record: GlobalAddresses) -> AddressBook:
        """A book of ``block`` holding what ``record`` allocated inside it (for an earlier block: nothing)."""
        book = cls(block)
        if parse_block(record.block) != block:
            return book
        entries = [(service_key(*k.split("/", 1)), ip) for k, ip in record.services.items() if "/" in k]
        entries += [(pod_key(pod), ip) for pod, ip in record.pods.items()]
        valid, used = assignable_range(block), set[IPv4Address]()
        for key, text in sorted(entries):
            address = IPv4Address(text)
            if int(address) in valid and address not in used:
                book._by_key[key] = address
                book._unclaimed.add(key)
                used.add(address)
        return book

    @property
    def free(self) -> int:
        return block_capacity(self.block) - len(self._by_key)

    def address_of(self, key: str) -> IPv4Address | None:
        return self._by_key.get(key)

    def assign(self, owner: Hashable, keys: Collection[str]) -> dict[str, IPv4Address]:
        """``owner`` holds exactly ``keys`` from now on (what it held besides is let go); their
        addresses. Exhausted, with nothing changed, when they do not fit."""
        wanted = frozenset(keys)
        released = self._owners.get(owner, frozenset()) - wanted
        freed = {k for k in released if self._holders.get(k, set()) <= {owner} and k not in self._unclaimed}
        missing = [k for k in sorted(wanted) if k not in self._by_key]
        if len(missing) > self.free + len(freed):
            raise Exhausted(self.block, len(missing), self.free + len(freed))
        for key in released:
            holders = self._holders[key]
            holders.discard(owner)
            if not holders:
                del self._holders[key]
        just_freed = {self._by_key.pop(key) for key in freed}
        for key in wanted:
            self._holders.setdefault(key, set()).add(owner)
        self._owners[owner] = wanted
        if not wanted:
            del self._owners[owner]
        self._unclaimed -= wanted
        used = set(self._by_key.values()) | just_freed
        # What this call freed goes last: a Pod that just left is not replaced at its address
        # while importers may still send to it.
        candidates = itertools.chain((a for a in assignable(self.block) if a not in used), sorted(just_freed))
        for key, address in zip(missing, candidates, strict=False):
            self._by_key[key] = address
        return {k: self._by_key[k] for k in wanted}

    def release(self, owner: Hashable) -> None:
        """``owner`` holds nothing any more."""
        self.assign(owner, ())

    def forget_unclaimed(self) -> None:
        """Free what the record named and no owner asked for since (gone while the member was away)."""
        for key in self._unclaimed:
            self._by_key.pop(key, None)
        self._unclaimed.clear()

    def record(self, globally_addressed: bool) -> GlobalAddresses:
        services = {k.removeprefix(SERVICE): str(a) for k, a in self._by_key.items() if k.startswith(SERVICE)}
        pods = {k.removeprefix(POD): str(a) for k, a in self._by_key.items() if k.startswith(POD)}
        return GlobalAddresses(str(self.block), globally_addressed, services, pods)

    def owners(self) -> Iterable[Hashable]:
        return list(self._owners)

    def held(self) -> Mapping[str, IPv4Address]:
        return dict(self._by_key)


def assignable_range(block: IPv4Network) -> range:
    """The integer values of the block's assignable addresses."""
    return range(int(block.network_address) + 2, int(block.broadcast_address))


def block_capacity(block: IPv4Network) -> int:
    return max(block.num_addresses - 3, 0)
