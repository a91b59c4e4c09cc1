"""Capped exponential backoff with jitter: the one retry pacing of every loop in mchub.

``Backoff`` is the policy (a delay per count of consecutive failures), shared by work
queues, informers, the hub's leadership loop (hub/replicas/leadership.py; the Lease
elector in kube/leader.py keeps client-go's fixed retry period with jitter), the agent's
reconciler and the hub's own retries;
``Retries`` counts one loop's failures under it (the member's hub session keeps one per
stream, so members do not reconnect in lockstep, and resets it after a success).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

# 2**64 times any initial delay is past every maximum; a larger exponent would overflow a float.
_MAX_EXPONENT = 64


@dataclass(frozen=True)
class Backoff:
    """Delay after the n-th consecutive failure: initial * factor**n, spread by +/- ``jitter``
    (a fraction) so that many clients do not retry in step, and never above ``maximum``."""

    initial: float = 0.5
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 0.2

    def delay(self, failures: int) -> float:
        base = min(self.maximum, self.initial * self.factor ** min(max(0, failures), _MAX_EXPONENT))
        if self.jitter <= 0:
            return base
        return min(self.maximum, max(0.0, base * (1 + random.uniform(-self.jitter, self.jitter))))


@dataclass
class Retries:
    """One loop's consecutive failures under a ``Backoff``: ``next_delay`` after each failure,
    ``reset`` after a success."""

    policy: Backoff = field(default_factory=Backoff)
    failures: int = 0

    def next_delay(self) -> float:
        delay = self.policy.delay(self.failures)
        self.failures += 1
        return delay

    def reset(self) -> None:
        self.failures = 0
