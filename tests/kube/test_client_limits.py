"""KubeClient's own accounting: a QPS/burst limit, 429 Retry-After honoured, and a request counter
by verb, resource and code (rest_client_requests_total)."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration
from prometheus_client import CollectorRegistry, generate_latest

from kube.client import KubeClient, connect
from kube.errors import NotFound, ServerError
from kube.ratelimit import TokenBucket
from kube.resources import CONFIG_MAPS
from kube.transport import describe_request
from mcapi.resources import SERVICE_IMPORTS
from sandbox.server import SandboxServer
from tests.loopback_http import serving


def test_requests_are_described_by_their_kubernetes_verb_and_resource() -> None:
    assert describe_request("GET", "/api/v1/namespaces/ns/services/web") == ("get", "services")
    assert describe_request("GET", "/api/v1/namespaces/ns/services") == ("list", "services")
    assert describe_request("GET", "/api/v1/services", [("watch", "true")]) == ("watch", "services")
    assert describe_request("GET", "/api/v1/namespaces/default") == ("get", "namespaces")
    assert describe_request("GET", "/api/v1/namespaces") == ("list", "namespaces")
    assert describe_request("POST", "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices") == (
        "create",
        "endpointslices.discovery.k8s.io",
    )
    assert describe_request("PATCH", "/apis/multicluster.x-k8s.io/v1beta1/namespaces/ns/serviceimports/w/status") == (
        "patch",
        "serviceimports.multicluster.x-k8s.io/status",
    )
    assert describe_request("PUT", "/api/v1/nodes/n1") == ("update", "nodes")
    assert describe_request("DELETE", "/api/v1/namespaces/ns/endpoints/e") == ("delete", "endpoints")
    assert describe_request("GET", "/apis/multicluster.x-k8s.io") == ("get", "")
    assert describe_request("GET", "/version") == ("get", "")


async def test_every_request_is_counted_by_verb_resource_and_code(client: KubeClient, namespace: str) -> None:
    before, writes_before = client.metrics.counts(), client.metrics.writes()
    await client.create(CONFIG_MAPS, {"metadata": {"name": "a", "namespace": namespace}})
    await client.get(CONFIG_MAPS, "a", namespace)
    with pytest.raises(NotFound):
        await client.get(CONFIG_MAPS, "missing", namespace)
    await client.patch(CONFIG_MAPS, "a", {"data": {"x": "1"}}, namespace)
    await client.list(CONFIG_MAPS, namespace)
    after = client.metrics.counts()
    grown = {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key, 0)}
    assert grown == {
        ("create", "configmaps", "201"): 1,
        ("get", "configmaps", "200"): 1,
        ("get", "configmaps", "404"): 1,
        ("patch", "configmaps", "200"): 1,
        ("list", "configmaps", "200"): 1,
    }
    assert client.metrics.writes() - writes_before == 2
    assert client.metrics.total(failed=True) >= 1

    registry = CollectorRegistry()
    client.metrics.register(registry)
    text = generate_latest(registry).decode()
    assert 'rest_client_requests_total{code="201",host="' in text
    assert 'method="POST",resource="configmaps",verb="create"} 1.0' in text


async def test_a_qps_limit_spaces_requests_beyond_the_burst_and_shows_in_metrics(sandbox: SandboxServer) -> None:
    async with await connect(sandbox.kubeconfig_path, qps=20, burst=2) as kube:
        assert kube.rate_limit == (20.0, 2)
        registry = CollectorRegistry()
        kube.metrics.register(registry)
        assert registry.get_sample_value("rest_client_rate_limit_qps", {"host": kube.host}) == 20.0
        assert registry.get_sample_value("rest_client_rate_limit_burst", {"host": kube.host}) == 2.0
        started = time.monotonic()
        await asyncio.gather(*(kube.server_version() for _ in range(6)))
        elapsed = time.monotonic() - started
        # 2 at once, then 4 more at 20/s: at least 0.2 s, whatever the server's speed.
        assert elapsed >= 0.19
        waited = registry.get_sample_value(
            "rest_client_rate_limiter_duration_seconds_count", {"verb": "get", "host": kube.host}
        )
        assert waited == 6


def test_the_token_bucket_serves_a_burst_then_one_token_per_interval() -> None:
    now = [0.0]
    bucket = TokenBucket(10, 3, clock=lambda: now[0])
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)  # queued behind the one before
    now[0] = 1.0  # a second later: the debt is paid and the bucket refilled (up to its size)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError):
        TokenBucket(0, 1)


class ThrottlingServer:
    """A stand-in apiserver answering the first ``throttled`` requests 429 (Retry-After: 0.1)."""

    def __init__(self, throttled: int, status: int = 429) -> None:
        self.throttled = throttled
        self.status = status
        self.requests = 0

    async def handle(self, _: web.Request) -> web.Response:
        self.requests += 1
        if self.requests <= self.throttled:
            body = {"kind": "Status", "status": "Failure", "code": self.status, "reason": "TooManyRequests"}
            return web.json_response(body, status=self.status, headers={"Retry-After": "0.1"})
        return web.json_response({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})


async def test_a_throttled_request_is_sent_again_after_the_servers_retry_after() -> None:
    throttling = ThrottlingServer(throttled=2)
    async with serving(throttling.handle) as url, KubeClient.from_configuration(Configuration(host=url)) as kube:
        started = time.monotonic()
        created = await kube.create(CONFIG_MAPS, {"metadata": {"name": "a"}}, namespace="default")
        assert created["metadata"]["name"] == "a"
        assert time.monotonic() - started >= 0.19  # two Retry-After waits of 0.1 s
        assert throttling.requests == 3
        assert kube.metrics.counts() == {("create", "configmaps", "429"): 2, ("create", "configmaps", "200"): 1}


async def test_a_server_error_is_not_retried_by_the_client() -> None:
    server = ThrottlingServer(throttled=1, status=503)
    async with serving(server.handle) as url, KubeClient.from_configuration(Configuration(host=url)) as kube:
        with pytest.raises(ServerError):
            await kube.get(SERVICE_IMPORTS, "a", "default")
    assert server.requests == 1


async def test_without_a_proxy_for_its_server_a_client_looks_nothing_up_in_the_environment(
    sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    async with await connect(sandbox.kubeconfig_path) as kube:
        assert kube._api.rest_client.pool_manager.trust_env is False
        await kube.server_version()

    # A proxy for the server: the environment is still honoured, as kubectl honours it.
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "")
    async with await connect(sandbox.kubeconfig_path) as kube:
        assert kube._api.rest_client.pool_manager.trust_env is True
