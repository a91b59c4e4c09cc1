"""What a KubeClient did, as Prometheus metrics in client-go's names.

- ``rest_client_requests_total{code,host,method,verb,resource}``: every request by its answer
  (client-go and controller-runtime count ``code,host,method``; ``verb`` is the Kubernetes verb,
  get/list/watch/create/update/patch/delete, and ``resource`` the qualified resource with its
  subresource, e.g. ``serviceimports.multicluster.x-k8s.io/status``). A request that got no
  answer counts with code ``<error>``, as client-go counts it.
- ``rest_client_rate_limiter_duration_seconds{verb,host}``: time spent waiting for the QPS limit.
- ``rest_client_rate_limit_qps{host}`` / ``rest_client_rate_limit_burst{host}``: the limit in
  force (0: none).

The collectors belong to no registry until ``register(registry)``: every client counts, and
a process shows the counts of the clients it chose (a member registers its own client).

``once_per_registry`` makes a set of collectors once per registry, for parts made more than once
in one process (a member that joins again, several work queues).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

M = TypeVar("M")
_MADE: weakref.WeakKeyDictionary[CollectorRegistry, dict[Callable[..., Any], Any]] = weakref.WeakKeyDictionary()


def once_per_registry(make: Callable[[CollectorRegistry], M], registry: CollectorRegistry) -> M:
    """``make(registry)``, called once per registry and kept: a metric's name can be registered in
    a registry only once, and every part made later on that registry shares the first's collectors."""
    made = _MADE.setdefault(registry, {})
    if make not in made:
        made[make] = make(registry)
    return cast(M, made[make])


WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
NO_ANSWER = "<error>"

# Waits for a token range from none to seconds when a burst drains the bucket.
_WAIT_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class ClientMetrics:
    def __init__(self, host: str) -> None:
        self.host = host
        self.requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, verb, resource and host.",
            ["code", "host", "method", "verb", "resource"],
            registry=None,
        )
        self.rate_limiter_wait = Histogram(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds, by verb and host.",
            ["verb", "host"],
            buckets=_WAIT_BUCKETS,
            registry=None,
        )
        self.qps = Gauge(
            "rest_client_rate_limit_qps", "Requests per second allowed (0: no limit).", ["host"], registry=None
        )
        self._request_children: dict[tuple[int | str, str, str, str], Any] = {}
        self._wait_children: dict[str, Any] = {}
        self.burst = Gauge(
            "rest_client_rate_limit_burst", "Requests allowed at once (0: no limit).", ["host"], registry=None
        )
        self.set_limit(0.0, 0)

    def collectors(self) -> tuple[Counter | Histogram | Gauge, ...]:
        return (self.requests, self.rate_limiter_wait, self.qps, self.burst)

    def register(self, registry: CollectorRegistry) -> None:
        """Expose these metrics on ``registry`` too (once per registry)."""
        for collector in self.collectors():
            registry.register(collector)

    def set_limit(self, qps: float, burst: int) -> None:
        self.qps.labels(self.host).set(qps)
        self.burst.labels(self.host).set(burst)

    def count_request(self, code: int | str, method: str, verb: str, resource: str) -> None:
        key = (code, method, verb, resource)
        child = self._request_children.get(key)
        if child is None:  # labels() checks its arguments every time: once per combination is enough
            child = self._request_children[key] = self.requests.labels(str(code), self.host, method, verb, resource)
        child.inc()

    def observe_wait(self, verb: str, seconds: float) -> None:
        child = self._wait_children.get(verb)
        if child is None:
            child = self._wait_children[verb] = self.rate_limiter_wait.labels(verb, self.host)
        child.observe(seconds)

    def counts(self) -> dict[tuple[str, str, str], float]:
        """Requests so far by (verb, resource, code)."""
        out: dict[tuple[str, str, str], float] = {}
        for metric in self.requests.collect():
            for sample in metric.samples:
                if not sample.name.endswith("_total"):
                    continue
                labels = sample.labels
                key = (labels["verb"], labels["resource"], labels["code"])
                out[key] = out.get(key, 0.0) + sample.value
        return out

    def total(
        self,
        *,
        verbs: Iterable[str] | None = None,
        resource: str | None = None,
        failed: bool | None = None,
    ) -> int:
        """How many requests of these verbs (all: None), on this resource (all: None), that
        failed (answered >= 400 or not at all) or succeeded (None: both)."""
        wanted = set(verbs) if verbs is not None else None
        total = 0.0
        for (verb, res, code), value in self.counts().items():
            if wanted is not None and verb not in wanted:
                continue
            if resource is not None and res != resource:
                continue
            if failed is not None and _failed(code) != failed:
                continue
            total += value
        return int(total)

    def writes(self) -> int:
        return self.total(verbs=WRITE_VERBS)


def _failed(code: str) -> bool:
    return not code.isdigit() or int(code) >= 400
