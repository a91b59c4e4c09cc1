"""agent.pairing: which remote Gateway each Gateway sends to, the same on every Node of both clusters."""

from __future__ import annotations

from collections import Counter
from ipaddress import IPv4Address

import pytest

from agent.pairing import pair

SENDERS = [IPv4Address(f"192.168.1.{n}") for n in range(1, 201)]
REMOTE = [IPv4Address(f"172.16.0.{n}") for n in (1, 2, 3)]


def test_pairing_is_a_pure_function_of_the_two_addresses_and_ignores_the_order_of_choices() -> None:
    for sender in SENDERS[:20]:
        assert pair(sender, REMOTE) == pair(sender, list(reversed(REMOTE)))


def test_a_gateway_that_leaves_moves_only_the_senders_that_had_it() -> None:
    before = {s: pair(s, REMOTE) for s in SENDERS}
    gone = REMOTE[1]
    after = {s: pair(s, [r for r in REMOTE if r != gone]) for s in SENDERS}
    moved = {s for s in SENDERS if before[s] != after[s]}
    assert moved == {s for s in SENDERS if before[s] == gone}


def test_senders_spread_over_the_remote_gateways() -> None:
    counts = Counter(pair(s, REMOTE) for s in SENDERS)
    assert set(counts) == set(REMOTE)
    assert min(counts.values()) > len(SENDERS) / len(REMOTE) / 2


def test_no_gateway_to_pair_with_is_an_error() -> None:
    with pytest.raises(ValueError, match="no Gateway"):
        pair(SENDERS[0], [])
