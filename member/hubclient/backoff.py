"""The session's reconnect pacing: kube's capped, jittered exponential backoff, counted
per loop (so members do not reconnect in lockstep) and reset after a success."""

from __future__ import annotations

from dataclasses import dataclass, field

from kube.backoff import Backoff as Policy


@dataclass
class Backoff:
    """Delays in seconds: initial, initial*factor, ... up to cap, each jittered by +-jitter."""

    initial: float = 0.5
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 0.2
    attempts: int = 0
    _policy: Policy = field(init=False)

    def __post_init__(self) -> None:
        self._policy = Policy(self.initial, self.cap, self.factor, self.jitter)

    def next_delay(self) -> float:
        delay = min(self.cap, self._policy.delay(min(self.attempts, 64)))
        self.attempts += 1
        return delay

    def reset(self) -> None:
        self.attempts = 0
