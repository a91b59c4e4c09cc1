"""kube.backoff: the one retry pacing (a policy, and one loop's count of failures under it)."""

from __future__ import annotations

from kube.backoff import Backoff, Retries


def test_the_delay_doubles_from_the_initial_one_up_to_the_maximum() -> None:
    policy = Backoff(initial=0.5, maximum=10.0, jitter=0.0)
    assert [policy.delay(n) for n in range(7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert policy.delay(-3) == 0.5


def test_jitter_spreads_the_delay_but_never_past_the_maximum() -> None:
    policy = Backoff(initial=1.0, maximum=4.0, jitter=0.5)
    early = [policy.delay(0) for _ in range(200)]
    assert all(0.5 <= d <= 1.5 for d in early) and len(set(early)) > 1
    assert all(2.0 <= policy.delay(10) <= 4.0 for _ in range(200))


def test_a_loop_failing_for_ever_stays_at_the_maximum_without_overflow() -> None:
    assert Backoff(initial=0.005, maximum=1000.0, jitter=0.0).delay(10_000) == 1000.0


def test_retries_count_failures_and_start_over_after_a_success() -> None:
    retries = Retries(Backoff(initial=0.1, maximum=1.0, jitter=0.0))
    assert [retries.next_delay() for _ in range(5)] == [0.1, 0.2, 0.4, 0.8, 1.0]
    assert retries.failures == 5
    retries.reset()
    assert retries.next_delay() == 0.1
