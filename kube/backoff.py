"""Capped exponential backoff with jitter, shared by the informer and the leader elector."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Delay after the n-th consecutive failure: initial * factor**n, capped at ``maximum``,
    then spread by +/- ``jitter`` (a fraction) so that many clients do not retry in step."""

    initial: float = 0.5
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 0.2

    def delay(self, failures: int) -> float:
        base = min(self.maximum, self.initial * self.factor ** max(0, failures))
        if self.jitter <= 0:
            return base
        return max(0.0, base * (1 + random.uniform(-self.jitter, self.jitter)))
