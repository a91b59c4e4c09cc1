"""`mchub demo` (the README's `make demo`): a hub and three sandbox clusters, a
Service exported from west, and the commands that show it imported in east."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import shutil
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import ENDPOINTS, SERVICE_EXPORTS, SERVICE_IMPORTS, SERVICES
from mchub_cli.logs import log_to_file

if TYPE_CHECKING:
    from hub.app import HubApp
    from mchub_cli.localset import LocalClusterSet

log = logging.getLogger(__name__)

SAMPLE_NAMESPACE = "default"
SAMPLE_NAME = "nginx"
# In the work dir: everything the hub, the sandboxes and the members log (the terminal gets
# a few progress lines and the summary; --verbose brings the logs back to it).
LOG_FILE = "demo.log"


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser("demo", help="run a local ClusterSet (hub + 3 sandbox clusters)")
    parser.add_argument("--work-dir", type=Path, help="where the clusters keep kubeconfigs (default: a temp dir)")
    parser.add_argument("--rest-port", type=int, default=8080, help="hub REST/dashboard port (default 8080)")
    parser.add_argument(
        "--exit-when-ready", action="store_true", help="stop once the sample Service is imported (for tests)"
    )
    parser.add_argument(
        "--verbose", action="store_true", help=f"show the logs here too (they always go to <work-dir>/{LOG_FILE})"
    )
    parser.set_defaults(func=run_demo)


def say(text: str) -> None:
    print(text, flush=True)


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


def _hub_lines(hub: HubApp) -> list[str]:
    """How to call the hub: REST with curl and mcctl, gRPC with grpcurl, the dashboard; all verify its CA."""
    token, url, ca = hub.admin_token, hub.rest_url, hub.ca_cert
    curl_ca = f"--cacert {ca} " if ca else ""
    mcctl_ca = f" --hub-ca-file {ca}" if ca else ""
    grpcurl_tls = f"-cacert {ca}" if ca else "-plaintext"
    lines = [
        f"Hub REST:   curl {curl_ca}-H 'Authorization: Bearer {token}' {url}/api/v1/resourceimports",
        f"mcctl:      mcctl get resourceimport --hub-url {url}{mcctl_ca} --token {token}",
        f"Hub gRPC:   grpcurl {grpcurl_tls} -H 'authorization: Bearer {token}' {hub.grpc_target} list",
        f"Dashboard:  {url}/  (admin token: {token})",
    ]
    if ca:
        lines.append(f"            your browser does not know the hub's CA ({ca}): accept its warning, or import it")
    return lines


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
        *_hub_lines(hub),
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
    work_dir.mkdir(parents=True, exist_ok=True)
    log_file = work_dir / LOG_FILE
    log_to_file(log_file, keep_terminal=args.verbose)
    say(f"Logs: {log_file}" + ("" if args.verbose else "  (--verbose shows them here)"))
    clusterset = LocalClusterSet(work_dir, rest_address=f"127.0.0.1:{_free_or_any(args.rest_port)}")
    failed = False
    try:
        await clusterset.start(on_step=say)
        say(f"west exports Service {SAMPLE_NAMESPACE}/{SAMPLE_NAME}; waiting for east to import it ...")
        await export_sample(clusterset.clusters["test-cluster-west"].client)
        await wait_imported(clusterset.clusters["test-cluster-east"].client)
        say(_instructions(clusterset))
        if not args.exit_when_ready:
            say("\nPress Ctrl-C to stop; everything is cleaned up.")
            await _until_stopped()
    except Exception as exc:
        failed = True
        log.exception("demo failed")
        print(f"mchub demo failed: {exc}\nIts logs are in {log_file} (kept).", file=sys.stderr, flush=True)
    finally:
        await clusterset.stop()
        # A failed demo keeps its temporary directory: the log says why it failed.
        if temp is not None and not failed:
            shutil.rmtree(temp, ignore_errors=True)
    if failed:
        return 1
    say("demo stopped and cleaned up")
    return 0


async def _until_stopped() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def run_demo(args: argparse.Namespace) -> int:
    return asyncio.run(demo(args))
