"""API servers apart from the Nodes: the control plane on an address of its own.

envtest lists every Node's IP as the endpoints of ``default/kubernetes`` (a forwarder in each
Node splices to the host's API server), so a failed Node also takes with it whichever Pod
connections to the API server went through it: a member's watch or an agent's report then
waits for TCP to notice the dead path before anything is written. That is one topology; in
another, as common (a managed control plane, or kubeadm's control-plane Nodes that are not
Gateways), the API server is reached at an address no Gateway Node carries.

``serve_api_apart`` gives a cluster that second topology: the host's underlay address (the
".1" every Node and Pod already reaches) forwards to the cluster's API server, and
``default/kubernetes`` lists that address alone. The forwarder is envtest's own ``nsfwd.py``,
run in the host's namespace with its PID file under DIR/pids, so ``down`` stops it with the rest.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from hack.nodeset.clusters import Cluster, EnvtestNodes, envtest_dir
from hack.nodeset.kubectl import until

PID_SUFFIX = ".nsfwd.pid"  # envtest's down stops DIR/pids/*.nsfwd.pid whose command line names DIR/


def underlay_gateway(directory: Path) -> str:
    """The host's address on DIR's underlay (UNDERLAY_GW of envtest's underlay.env)."""
    for line in (directory / ".nodes" / "underlay.env").read_text().splitlines():
        key, _, value = line.partition("=")
        if key == "UNDERLAY_GW":
            return value.strip("'\"")
    raise RuntimeError(f"{directory}: underlay.env names no UNDERLAY_GW")


def _api_port(cluster: Cluster) -> int:
    server = cluster.kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
    port = urlsplit(server.strip()).port
    if port is None:
        raise RuntimeError(f"{cluster.name}: the kubeconfig's server {server!r} names no port")
    return port


def _forward(directory: Path, name: str, host: str, port: int) -> None:
    scripts = envtest_dir()
    assert scripts is not None
    pid_file = directory / "pids" / f"{name}-api-apart{PID_SUFFIX}"
    forwarder = subprocess.Popen(
        [
            "python3",
            str(scripts / "nsfwd.py"),
            "--netns",
            "/proc/self/ns/net",
            "--label",
            f"{directory}/{name}/",
            f"{host}:{port}",
            f"127.0.0.1:{port}",
        ],
        stdout=subprocess.PIPE,
        stderr=(directory / name / "api-apart.log").open("w"),
        text=True,
        start_new_session=True,
    )
    assert forwarder.stdout is not None
    if "ready" not in forwarder.stdout.readline():
        log = (directory / name / "api-apart.log").read_text().strip()
        raise RuntimeError(f"{name}: the API forwarder on {host}:{port} did not start: {log}")
    pid_file.write_text(f"{forwarder.pid}\n")


def _point_kubernetes_service_at(cluster: Cluster, host: str) -> None:
    endpoints = cluster.kubectl.json("get", "endpoints", "kubernetes", "-n", "default")
    for subset in endpoints.get("subsets", []):
        subset["addresses"] = [{"ip": host}]
        subset.pop("notReadyAddresses", None)
    endpoints["metadata"].pop("managedFields", None)
    cluster.kubectl("replace", "-f", "-", stdin=json.dumps(endpoints))
    slice_ = cluster.kubectl.json("get", "endpointslice", "kubernetes", "-n", "default")
    slice_["endpoints"] = [{"addresses": [host], "conditions": {"ready": True}}]
    slice_["metadata"].pop("managedFields", None)
    cluster.kubectl("replace", "-f", "-", stdin=json.dumps(slice_))
    until(
        f"{cluster.name}: default/kubernetes lists {host} alone",
        lambda: (
            cluster.kubectl(
                "get", "endpointslice", "kubernetes", "-n", "default", "-o", "jsonpath={.endpoints[*].addresses[*]}"
            ).split()
            == [host]
        ),
        timeout=30,
    )


def serve_api_apart(envtest: EnvtestNodes) -> str:
    """Every cluster's Pods reach its API server at the host's underlay address; returns it."""
    host = underlay_gateway(envtest.directory)
    for cluster in envtest.clusters.values():
        _forward(envtest.directory, cluster.name, host, _api_port(cluster))
        _point_kubernetes_service_at(cluster, host)
    return host


def api_apart(directory: Path) -> bool:
    """Whether ``serve_api_apart`` ran for DIR."""
    return any((directory / "pids").glob(f"*-api-apart{PID_SUFFIX}"))
