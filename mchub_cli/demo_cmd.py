"""`mchub demo` (the README's `make demo`): a hub and three sandbox clusters, a
Service exported from west, and the commands that show it imported in east."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import signal
import socket
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import ENDPOINTS, SERVICE_EXPORTS, SERVICE_IMPORTS, SERVICES

if TYPE_CHECKING:
    from mchub_cli.localset import LocalClusterSet

SAMPLE_NAMESPACE = "default"
SAMPLE_NAME = "nginx"


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser("demo", help="run a local ClusterSet (hub + 3 sandbox clusters)")
    parser.add_argument("--work-dir", type=Path, help="where the clusters keep kubeconfigs (default: a temp dir)")
    parser.add_argument("--rest-port", type=int, default=8080, help="hub REST/dashboard port (default 8080)")
    parser.add_argument(
        "--exit-when-ready", action="store_true", help="stop once the sample Service is imported (for tests)"
    )
    parser.set_defaults(func=run_demo)


async def export_sample(client: KubeClient) -> None:
    """What a user does in west: a Service, its Endpoints (no Pods here), a ServiceExport."""
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SAMPLE_NAME, "namespace": SAMPLE_NAMESPACE},
        "spec": {"selector": {"app": SAMPLE_NAME}, "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
    }
    await client.create(SERVICES, service, namespace=SAMPLE_NAMESPACE)
    endpoints = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": SAMPLE_NAME, "namespace": SAMPLE_NAMESPACE},
        "subsets": [{"addresses": [{"ip": "10.10.1.5"}], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}],
    }
    await client.create(ENDPOINTS, endpoints, namespace=SAMPLE_NAMESPACE)
    export = {
        "apiVersion": SERVICE_EXPORTS.api_version,
        "kind": "ServiceExport",
        "metadata": {"name": SAMPLE_NAME, "namespace": SAMPLE_NAMESPACE},
    }
    await client.create(SERVICE_EXPORTS, export, namespace=SAMPLE_NAMESPACE)


async def wait_imported(client: KubeClient, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with contextlib.suppress(NotFound):
            await client.get(SERVICE_IMPORTS, SAMPLE_NAME, SAMPLE_NAMESPACE)
            await client.get(SERVICES, f"antrea-mc-{SAMPLE_NAME}", SAMPLE_NAMESPACE)
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"the ServiceImport {SAMPLE_NAMESPACE}/{SAMPLE_NAME} did not appear within {within}s")


def _instructions(clusterset: LocalClusterSet) -> str:
    hub = clusterset.hub
    assert hub is not None
    east = clusterset.clusters["test-cluster-east"].kubeconfig
    west = clusterset.clusters["test-cluster-west"].kubeconfig
    lines = [
        "",
        "ClusterSet 'test-clusterset' is up: a hub and three member clusters (north, east, west).",
        f"west exported Service {SAMPLE_NAMESPACE}/{SAMPLE_NAME}; east imported it:",
        "",
        f"  kubectl --kubeconfig {east} get serviceimport -n {SAMPLE_NAMESPACE}",
        f"  kubectl --kubeconfig {east} get service antrea-mc-{SAMPLE_NAME} -n {SAMPLE_NAMESPACE}",
        f"  kubectl --kubeconfig {east} get endpoints antrea-mc-{SAMPLE_NAME} -n {SAMPLE_NAMESPACE}",
        f"  kubectl --kubeconfig {west} get serviceexport {SAMPLE_NAME} -n {SAMPLE_NAMESPACE} -o yaml",
        "",
        f"Hub REST:   curl -H 'Authorization: Bearer {hub.admin_token}' {hub.rest_url}/api/v1/resourceimports",
        f"Dashboard:  {hub.rest_url}/  (admin token: {hub.admin_token})",
    ]
    return "\n".join(lines)


def _free_or_any(port: int) -> int:
    """The asked port when it is free on loopback, else 0 (any free one)."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return 0
    return port


async def demo(args: argparse.Namespace) -> int:
    # The demo wires every component together; import them only when it runs, so
    # `mchub hub` and friends start without loading the member and the sandbox.
    from mchub_cli.localset import LocalClusterSet  # noqa: PLC0415

    temp = None
    work_dir: Path = args.work_dir
    if work_dir is None:
        temp = tempfile.mkdtemp(prefix="mchub-demo-")
        work_dir = Path(temp)
    clusterset = LocalClusterSet(work_dir, rest_address=f"127.0.0.1:{_free_or_any(args.rest_port)}")
    try:
        await clusterset.start()
        west = clusterset.clusters["test-cluster-west"].client
        east = clusterset.clusters["test-cluster-east"].client
        await export_sample(west)
        await wait_imported(east)
        print(_instructions(clusterset), flush=True)
        if not args.exit_when_ready:
            print("\nPress Ctrl-C to stop; everything is cleaned up.", flush=True)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError):
                    loop.add_signal_handler(sig, stop.set)
            await stop.wait()
    finally:
        await clusterset.stop()
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    print("demo stopped and cleaned up", flush=True)
    return 0


def run_demo(args: argparse.Namespace) -> int:
    return asyncio.run(demo(args))
