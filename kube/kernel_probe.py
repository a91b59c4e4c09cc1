"""Is a Node's kernel answering? A TCP SYN to a port; a connection or the RST of a closed port
is an answer, silence (or no route) is not.

Asks the kernel rather than a process, so a restart of the agent that owns the port does not
count as a failure. Used by the agent's candidates and Gateways (of their own cluster's
Gateways) and by the member, which checks a report of an unreachable Gateway before acting on
it in active-active mode.
"""

from __future__ import annotations

import asyncio
import socket


async def knock(sock: socket.socket, ip: str, port: int, within: float) -> bool:
    """Whether ``ip`` answers a SYN to ``port`` within ``within`` seconds. ``sock``: a fresh
    non-blocking TCP socket (closed here), made wherever it must be (e.g. in a network namespace)."""
    try:
        async with asyncio.timeout(within):
            await asyncio.get_running_loop().sock_connect(sock, (ip, port))
    except ConnectionRefusedError:
        return True  # the RST of a closed port: the kernel answered
    except (TimeoutError, OSError):
        return False  # no answer, or no route
    finally:
        sock.close()
    return True


async def answers(ip: str, port: int, within: float = 1.0) -> bool:
    """knock from this process's own network namespace."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    return await knock(sock, ip, port, within)
