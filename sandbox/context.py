"""What every request handler needs from one sandbox, bundled."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from sandbox.auth import Authenticator, TokenAuthority
from sandbox.registry import Registry
from sandbox.resources import ResourceCatalog
from sandbox.store import ObjectStore


@dataclass
class ApiContext:
    name: str
    catalog: ResourceCatalog
    store: ObjectStore
    registry: Registry
    authority: TokenAuthority
    authenticator: Authenticator
    # Seconds between BOOKMARK events on watches that allow them (a real apiserver: ~1 min).
    bookmark_interval: float = 60.0
    server_address: str = ""
    # Recent watch events as plain watches send them, encoded once for all of them (as the
    # apiserver's watch cache serializes an event once): (revision, shown as, resource, version) ->
    # the line. Bounded: every watch of an event takes it at about the same time.
    watch_lines: OrderedDict[tuple[int, str, str, str], bytes] = field(default_factory=OrderedDict)
