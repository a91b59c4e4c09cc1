"""The agent serves its policy metrics on /metrics when given an address."""

from __future__ import annotations

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from agent.kubewatch.policy_status import PolicyMetrics
from agent.metrics_server import MetricsServer


async def test_the_policy_skip_counter_is_served_on_metrics() -> None:
    registry = CollectorRegistry()
    metrics = PolicyMetrics(registry)
    metrics.skips.labels(reason="TierNotFound").inc()
    server = MetricsServer("127.0.0.1:0", registry)
    await server.start()
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{server.port}/metrics") as reply:
                assert reply.status == 200
                text = await reply.text()
            async with http.get(f"http://127.0.0.1:{server.port}/healthz") as reply:
                assert reply.status == 200
    finally:
        await server.stop()
    assert 'reason="TierNotFound"' in text


def test_an_address_without_a_port_is_refused() -> None:
    with pytest.raises(ValueError, match="HOST:PORT"):
        MetricsServer("localhost", CollectorRegistry())
