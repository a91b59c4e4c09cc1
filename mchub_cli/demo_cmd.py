"""`mchub demo` (the README's `make demo`): a hub and three sandbox clusters, a
Service exported from west, and the commands that show it imported in east; north is also
the leader, as in the user guide: the hub mirrors its state into north's
`antrea-multicluster`, where the demo applies the guide's ClusterNetworkPolicy ResourceExport
with kubectl and shows the ResourceImport the hub made of it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import shutil
import socket
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import ENDPOINTS, SERVICES
from kube.waiting import until_stop_signal
from mcapi import names
from mcapi.resources import RESOURCE_EXPORTS, RESOURCE_IMPORTS, SERVICE_EXPORTS, SERVICE_IMPORTS
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
LEADER_NAMESPACE = names.DEFAULT_LEADER_NAMESPACE
POLICY = "strict-namespace-isolation"
POLICY_EXPORT = f"{POLICY}-for-test-clusterset"
POLICY_FILE = "acnp-resourceexport.yaml"
# The user guide's "ClusterNetworkPolicy Replication" manifest.
POLICY_MANIFEST = f"""apiVersion: multicluster.crd.antrea.io/v1alpha1
kind: ResourceExport
metadata:
  name: {POLICY_EXPORT}
  namespace: {LEADER_NAMESPACE}
spec:
  kind: AntreaClusterNetworkPolicy
  name: {POLICY}
  clusterNetworkPolicy:
    priority: 1
    tier: securityops
    appliedTo:
      - namespaceSelector: {{}}
    ingress:
      - action: Pass
        from:
          - namespaces:
              match: Self
          - podSelector:
              matchLabels:
                k8s-app: kube-dns
      - action: Drop
        from:
          - namespaceSelector: {{}}
"""


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


async def export_policy(kubeconfig: Path, client: KubeClient, work_dir: Path) -> None:
    """What a ClusterSet admin does in the leader: `kubectl apply` the guide's manifest (through
    the API when kubectl is not installed)."""
    manifest = work_dir / POLICY_FILE
    manifest.write_text(POLICY_MANIFEST)
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        await client.create(RESOURCE_EXPORTS, yaml.safe_load(POLICY_MANIFEST), namespace=LEADER_NAMESPACE)
        return
    process = await asyncio.create_subprocess_exec(
        kubectl, "--kubeconfig", str(kubeconfig), "apply", "-f", str(manifest),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"kubectl apply -f {manifest} failed: {err.decode().strip()}")


async def wait_policy_imported(client: KubeClient, within: float = 30.0) -> dict[str, Any]:
    """The ResourceImport the hub made of the policy, once mirrored into the leader."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with contextlib.suppress(NotFound):
            return await client.get(RESOURCE_IMPORTS, names.acnp_import_name(POLICY), LEADER_NAMESPACE)
        await asyncio.sleep(0.1)
    raise TimeoutError(f"the ResourceImport of {POLICY_EXPORT} did not appear in the leader within {within}s")


def _import_table(imported: dict[str, Any]) -> list[str]:
    """`kubectl get resourceimport NAME` as it prints it (its columns: Kind, Namespace, Name, Age)."""
    spec = imported.get("spec") or {}
    cells = [imported["metadata"]["name"], spec.get("kind", ""), spec.get("namespace", ""), spec.get("name", "")]
    header = ["NAME", "KIND", "NAMESPACE", "NAME"]
    widths = [max(len(h), len(c)) + 3 for h, c in zip(header, cells, strict=True)]
    created = datetime.fromisoformat(str(imported["metadata"].get("creationTimestamp", "")).replace("Z", "+00:00"))
    age = max(0, int((datetime.now(UTC) - created).total_seconds()))
    return [
        "".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + "AGE",
        "".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + f"{age}s",
    ]


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


def _instructions(clusterset: LocalClusterSet, imported: dict[str, Any]) -> str:
    hub = clusterset.hub
    assert hub is not None
    east = clusterset.clusters["test-cluster-east"].kubeconfig
    west = clusterset.clusters["test-cluster-west"].kubeconfig
    north = clusterset.leader_cluster.kubeconfig
    ns = LEADER_NAMESPACE
    lines = [
        "",
        "ClusterSet 'test-clusterset' is up: a hub and three member clusters (north, east, west).",
        f"west exported Service {SAMPLE_NAMESPACE}/{SAMPLE_NAME}; east imported it:",
        f"  kubectl --kubeconfig {east} get serviceimport -n {SAMPLE_NAMESPACE}",
        f"  kubectl --kubeconfig {east} get service antrea-mc-{SAMPLE_NAME} -n {SAMPLE_NAMESPACE}",
        f"  kubectl --kubeconfig {east} get endpoints antrea-mc-{SAMPLE_NAME} -n {SAMPLE_NAMESPACE}",
        f"  kubectl --kubeconfig {west} get serviceexport {SAMPLE_NAME} -n {SAMPLE_NAMESPACE} -o yaml",
        "north, the leader, shows the hub's state as Antrea's leader does; the guide's policy export",
        f"({clusterset.work_dir / POLICY_FILE}, applied there with kubectl) became a ResourceImport:",
        f"  kubectl --kubeconfig {north} get resourceexport -n {ns}",
        f"  kubectl --kubeconfig {north} get memberclusterannounce -n {ns}",
        f"  kubectl --kubeconfig {north} get resourceimport -n {ns}",
        *(f"    {line}" for line in _import_table(imported)),
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
    rest_address = f"127.0.0.1:{_free_or_any(args.rest_port)}"
    clusterset = LocalClusterSet(work_dir, rest_address=rest_address, mirror=True)
    failed = False
    try:
        await clusterset.start(on_step=say)
        say(
            f"west exports Service {SAMPLE_NAMESPACE}/{SAMPLE_NAME}, north gets the guide's policy export; "
            "waiting for the imports ..."
        )
        await export_sample(clusterset.clusters["test-cluster-west"].client)
        leader = clusterset.leader_cluster
        await export_policy(leader.kubeconfig, leader.client, work_dir)
        await wait_imported(clusterset.clusters["test-cluster-east"].client)
        imported = await wait_policy_imported(leader.client)
        say(_instructions(clusterset, imported))
        if not args.exit_when_ready:
            say("\nPress Ctrl-C to stop; everything is cleaned up.")
            await until_stop_signal()
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


def run_demo(args: argparse.Namespace) -> int:
    return asyncio.run(demo(args))
