"""Capped exponential backoff with jitter, so members do not reconnect in lockstep."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Delays in seconds: initial, initial*factor, ... up to cap, each jittered by +-jitter."""

    initial: float = 0.5
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 0.2
    rng: random.Random = field(default_factory=random.Random)
    attempts: int = 0

    def next_delay(self) -> float:
        base = min(self.cap, self.initial * self.factor ** min(self.attempts, 64))
        self.attempts += 1
        return min(self.cap, base * self.rng.uniform(1 - self.jitter, 1 + self.jitter))

    def reset(self) -> None:
        self.attempts = 0
