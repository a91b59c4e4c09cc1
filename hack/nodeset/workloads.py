"""Test workloads on nodes: a web server that names its Pod, client Pods, requests from them.

The server is Debian's busybox ``httpd`` answering ``hello from <Pod name>``; clients run the
tools image (curl, wrk, iperf3, dig) and are driven with ``kubectl exec``, so every request
really leaves a Pod on a node and crosses kube-proxy.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any

import yaml

from hack.nodeset.clusters import Cluster
from hack.nodeset.images import TOOLS_IMAGE, WEB_IMAGE
from hack.nodeset.kubectl import KubectlError, until

ANSWER = re.compile(r"hello from (\S+)")


def ensure_namespace(cluster: Cluster, namespace: str, labels: dict[str, str] | None = None) -> None:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    if labels:
        body["metadata"]["labels"] = labels
    cluster.kubectl.apply(yaml.safe_dump(body))


def service_export(namespace: str, name: str) -> dict[str, Any]:
    """The ServiceExport of the Service ``name``, as a user writes it."""
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ServiceExport",
        "metadata": {"name": name, "namespace": namespace},
    }


def serve(
    cluster: Cluster,
    namespace: str,
    name: str,
    container: dict[str, Any],
    port: tuple[str, int],
    *,
    replicas: int = 1,
    node: str | None = None,
    export: bool = True,
) -> None:
    """A Deployment of ``container`` (Pods labelled ``app: <name>``, on ``node`` when given), its
    Service on ``port`` (name, number) and (``export``) its ServiceExport; returns once rolled out."""
    pod_spec: dict[str, Any] = {"terminationGracePeriodSeconds": 1, "containers": [container]}
    if node is not None:
        pod_spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    port_name, number = port
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"app": name}, "ports": [{"name": port_name, "port": number, "protocol": "TCP"}]},
        },
    ]
    if export:
        objects.append(service_export(namespace, name))
    cluster.kubectl.apply(yaml.safe_dump_all(objects))
    cluster.kubectl("-n", namespace, "rollout", "status", f"deployment/{name}", "--timeout=120s", timeout=130)


def web_server(
    cluster: Cluster,
    namespace: str,
    name: str,
    *,
    replicas: int = 1,
    node: str | None = None,
    export: bool = True,
    port: int = 80,
) -> None:
    """A Deployment answering ``hello from <Pod name>`` on ``port``, its Service, and (``export``)
    its ServiceExport."""
    container = {
        "name": "web",
        "image": WEB_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c", f'echo "hello from $(hostname)" > /www/index.html; exec httpd -f -p {port} -h /www'],
        "ports": [{"containerPort": port, "name": "http"}],
        "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 1},
    }
    serve(cluster, namespace, name, container, ("http", port), replicas=replicas, node=node, export=export)


PEER_PORT = 7070


def peer_server(cluster: Cluster, namespace: str, name: str, *, node: str | None = None) -> None:
    """A Deployment (socat, tools image) answering every TCP connection on PEER_PORT with the
    address it came from, its Service and ServiceExport: who the server sees across NAT."""
    container = {
        "name": "peer",
        "image": TOOLS_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": ["socat", f"TCP-LISTEN:{PEER_PORT},fork,reuseaddr", "SYSTEM:echo $SOCAT_PEERADDR"],
        "ports": [{"containerPort": PEER_PORT, "name": "peer"}],
        "readinessProbe": {"tcpSocket": {"port": PEER_PORT}, "periodSeconds": 1},
    }
    serve(cluster, namespace, name, container, ("peer", PEER_PORT), node=node)


def peer_seen(cluster: Cluster, namespace: str, pod: str, ip: str, *, seconds: float = 3) -> str | None:
    """The address a peer_server at ``ip`` saw this Pod's connection come from (None: no answer)."""
    try:
        out = exec_in(cluster, namespace, pod, "nc", "-w", str(int(seconds)), ip, str(PEER_PORT), timeout=seconds + 30)
    except KubectlError:
        return None
    return out.strip() or None


def client_pod(cluster: Cluster, namespace: str, name: str, *, node: str, labels: dict[str, str] | None = None) -> None:
    """A Pod of the tools image, pinned to ``node``, waiting to be exec'ed into."""
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": name}},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [
                {
                    "name": "client",
                    "image": TOOLS_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sleep", "infinity"],
                }
            ],
        },
    }
    cluster.kubectl.apply(yaml.safe_dump(body))
    cluster.kubectl("-n", namespace, "wait", "--for=condition=Ready", f"pod/{name}", "--timeout=120s", timeout=130)


def exec_in(cluster: Cluster, namespace: str, pod: str, *command: str, timeout: float = 60) -> str:
    return cluster.kubectl("-n", namespace, "exec", pod, "--", *command, timeout=timeout)


def fetch(cluster: Cluster, namespace: str, pod: str, url: str, *, seconds: float = 3) -> str | None:
    """One HTTP GET from the Pod: the Pod name in the answer, or None when it failed."""
    try:
        out = exec_in(cluster, namespace, pod, "curl", "-sS", "--max-time", str(seconds), url, timeout=seconds + 30)
    except KubectlError:
        return None
    found = ANSWER.search(out)
    return found.group(1) if found else None


def fetch_until(cluster: Cluster, namespace: str, pod: str, url: str, *, timeout: float = 60) -> str:
    return until(f"an answer to {url} from {cluster.name}/{pod}", lambda: fetch(cluster, namespace, pod, url), timeout)


@dataclass
class Timings:
    """Request times in ms from a curl loop in one Pod."""

    samples: list[float] = field(default_factory=list)
    failed: int = 0

    def quantile(self, q: float) -> float:
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")

    @property
    def p50(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")

    @property
    def p99(self) -> float:
        return self.quantile(0.99)


def time_requests(cluster: Cluster, namespace: str, pod: str, url: str, count: int) -> Timings:
    """``count`` sequential GETs, each a new connection, timed by curl (time_total)."""
    script = (
        f"for i in $(seq {count}); do curl -s -o /dev/null --max-time 2 -w '%{{http_code}} %{{time_total}}\\n' {url}"
        " || echo 'fail 0'; done"
    )
    out = exec_in(cluster, namespace, pod, "sh", "-c", script, timeout=count * 3 + 60)
    timings = Timings()
    for line in out.splitlines():
        code, _, seconds = line.partition(" ")
        if code == "200":
            timings.samples.append(float(seconds) * 1000)
        else:
            timings.failed += 1
    return timings


def request_loop(cluster: Cluster, namespace: str, name: str, *, node: str, url: str, interval: float = 0.1) -> None:
    """A Pod sending one GET (1 s timeout, a new connection each) every ``interval`` seconds
    for as long as it runs, logging ``ok <unix time>`` or ``fail <unix time> <curl's exit code>``
    per request (28: no answer within the second; 7: refused; 56: reset)."""
    script = (
        f"while :; do t=$(date +%s.%N); curl -sf --max-time 1 -o /dev/null {url}; rc=$?; "
        f'if [ $rc = 0 ]; then echo "ok $t"; else echo "fail $t $rc"; fi; sleep {interval}; done'
    )
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [
                {
                    "name": "loop",
                    "image": TOOLS_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", script],
                }
            ],
        },
    }
    cluster.kubectl.apply(yaml.safe_dump(body))
    cluster.kubectl("-n", namespace, "wait", "--for=condition=Ready", f"pod/{name}", "--timeout=120s", timeout=130)


@dataclass(frozen=True)
class Outcome:
    at: float
    ok: bool
    code: int = 0
    """curl's exit code (0: answered)."""


def loop_outcomes(cluster: Cluster, namespace: str, name: str) -> list[Outcome]:
    outcomes = []
    for line in cluster.kubectl("-n", namespace, "logs", name).splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("ok", "fail"):
            code = int(parts[2]) if parts[0] == "fail" and len(parts) > 2 and parts[2].isdigit() else 0
            outcomes.append(Outcome(float(parts[1]), parts[0] == "ok", code))
    return outcomes


@dataclass(frozen=True)
class Gap:
    """Requests that failed between two that succeeded, and how long that lasted."""

    failed: int
    seconds: float


def gaps(outcomes: list[Outcome], since: float = 0.0) -> list[Gap]:
    found: list[Gap] = []
    last_ok: float | None = None
    failed = 0
    for outcome in outcomes:
        if outcome.at < since:
            last_ok = outcome.at if outcome.ok else last_ok
            continue
        if outcome.ok:
            if failed:
                found.append(Gap(failed, outcome.at - (last_ok if last_ok is not None else since)))
            failed, last_ok = 0, outcome.at
        else:
            failed += 1
    if failed:
        found.append(Gap(failed, float("inf")))
    return found
