"""Which remote Gateway a Gateway sends to, and which local Gateway a reply goes back through.

Every Gateway SNATs what it sends to its own gatewayIP, so a reply comes back to the Gateway that
sent the request. On the other side, the Gateway that received the request holds its connection
state (kube-proxy's translation of the Service address), so the reply must leave through it too.
Both sides get there with no shared state: Gateway ``a`` always sends to ``pair(a, B)`` of the
remote's Gateways ``B``, and the remote's Nodes route replies to ``a`` through ``pair(a, B)``,
the same function of the same two facts (``a`` arrives as the source address, ``B`` is the
remote's own ClusterInfo).

``pair`` is rendezvous hashing: each choice gets a weight from a hash of the pair, the largest
wins. A Gateway that leaves ``B`` moves only the senders that had chosen it; a returning one
takes back only its own. The hash is fixed (SHA-256), never seeded per process or per boot,
because Nodes of different clusters must agree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from ipaddress import IPv4Address


def _weight(sender: IPv4Address, choice: IPv4Address) -> bytes:
    return hashlib.sha256(sender.packed + choice.packed).digest()


def pair(sender: IPv4Address, choices: Sequence[IPv4Address]) -> IPv4Address:
    """The Gateway among ``choices`` that ``sender`` is paired with. Raises ValueError when empty."""
    if not choices:
        raise ValueError("no Gateway to pair with")
    return max(choices, key=lambda choice: _weight(sender, choice))
