"""A token bucket for a client's requests: at most ``qps`` per second on average, ``burst`` at once.

The same contract as client-go's ``flowcontrol.NewTokenBucketRateLimiter`` (a member of
Antrea uses 100 QPS, burst 200): a caller that finds the bucket empty reserves the next
token and waits for it, so waiters are served in the order they came and none starves.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class TokenBucket:
    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """``qps``: tokens added per second (> 0); ``burst``: the bucket's size (>= 1), full at start."""
        if qps <= 0:
            raise ValueError("qps must be positive (no limit: no TokenBucket)")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.qps = float(qps)
        self.burst = int(burst)
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._stamp = clock()

    def _refill(self) -> float:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.qps)
        self._stamp = now
        return now

    def reserve(self) -> float:
        """Take a token now, possibly one not yet there; returns how long to wait before using it."""
        self._refill()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> float:
        """Wait for a token; returns the seconds waited (0 when one was there)."""
        delay = self.reserve()
        if delay > 0:
            await self._sleep(delay)
        return delay
