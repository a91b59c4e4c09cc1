"""What every request handler needs from one sandbox, bundled."""

from __future__ import annotations

from dataclasses import dataclass, field

from sandbox.auth import Authenticator, TokenAuthority
from sandbox.registry import Registry
from sandbox.resources import ResourceCatalog
from sandbox.shared_lines import SharedLines
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
    # Recent watch events as plain watches send them, encoded once for all of them.
    watch_lines: SharedLines = field(default_factory=SharedLines)
