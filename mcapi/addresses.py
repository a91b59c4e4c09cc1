"""Addresses: which strings are IP addresses, and which hosts are the loopback.

A hub may be reached without TLS only on the loopback: the hub refuses to serve plaintext
on any other address, and members and mcctl refuse to dial one (a bearer token must never
cross a network in the clear); all three ask ``is_loopback_host``.
"""

from __future__ import annotations

import ipaddress
import socket


def is_loopback_host(host: str) -> bool:
    """``localhost`` or a loopback IP (``127.0.0.0/8``, ``::1``; brackets allowed)."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_ip_address(value: str) -> bool:
    """An IPv4 or IPv6 address (not a name, not a network), as ``ipaddress`` reads one."""
    # What the C parser takes, ipaddress takes too; it is asked first because the hub asks for
    # every endpoint of every export (ipaddress alone cost a tenth of an export's admission).
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, value)
        except (OSError, ValueError):
            continue
        return True
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True
