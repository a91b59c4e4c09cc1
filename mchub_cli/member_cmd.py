"""`mchub member`: run the member controller of one cluster until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
from pathlib import Path
from typing import Any

from kube.client import connect
from kube.errors import KubeError, PermanentError
from kube.waiting import until_stop_signal
from mcapi import trace
from mcapi.config import ConfigError
from mcapi.names import DEFAULT_MEMBER_NAMESPACE
from member.app import MemberApp
from member.config import DEFAULT_KUBE_API_BURST, DEFAULT_KUBE_API_QPS, MemberOptions
from member.dns.service import DnsOptions
from member.dns.zone import DEFAULT_TTL
from member.health import HealthServer
from member.hubclient import parse_target


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "member", help="run the member controller (join the ClusterSet, export Services, apply imports)"
    )
    parser.add_argument("--kubeconfig", type=Path, help="the member cluster (default: in-cluster)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument(
        "--namespace",
        default=DEFAULT_MEMBER_NAMESPACE,
        help=f"the member Namespace holding the ClusterSet and token Secret (default {DEFAULT_MEMBER_NAMESPACE})",
    )
    parser.add_argument(
        "--health-address",
        default="",
        help="serve /healthz, /readyz and /metrics on HOST:PORT (default: off; the Deployment uses 0.0.0.0:8081)",
    )
    parser.add_argument(
        "--dns-address",
        default="",
        help="serve <svc>.<ns>.svc.clusterset.local DNS on HOST:PORT, UDP and TCP "
        "(default: off; the Deployment uses 0.0.0.0:53)",
    )
    parser.add_argument(
        "--dns-ttl",
        type=int,
        default=DEFAULT_TTL,
        help=f"TTL of clusterset.local answers, seconds (default {DEFAULT_TTL})",
    )
    defaults = MemberOptions()
    parser.add_argument(
        "--kube-api-qps",
        type=float,
        default=DEFAULT_KUBE_API_QPS,
        help=f"requests per second to the member's API server, 0: no limit (default {DEFAULT_KUBE_API_QPS:g})",
    )
    parser.add_argument(
        "--kube-api-burst",
        type=int,
        default=DEFAULT_KUBE_API_BURST,
        help=f"requests at once above --kube-api-qps (default {DEFAULT_KUBE_API_BURST})",
    )
    parser.add_argument(
        "--import-workers",
        type=int,
        default=defaults.import_workers,
        help=f"imports written at once (default {defaults.import_workers})",
    )
    parser.add_argument(
        "--export-workers",
        type=int,
        default=defaults.export_workers,
        help=f"ServiceExports reconciled at once (default {defaults.export_workers})",
    )
    parser.add_argument(
        "--hub-watch-server",
        default="",
        help="send the import watch to this hub address (any replica serving watches, e.g. the Service "
        "mchub-hub-watch), and writes to the ClusterSet's leader server (default: everything there)",
    )
    parser.set_defaults(func=run_member)


async def serve(args: argparse.Namespace) -> int:
    try:
        dns_address = getattr(args, "dns_address", "")  # callers that build args by hand may leave it out
        dns = DnsOptions(dns_address, ttl=getattr(args, "dns_ttl", DEFAULT_TTL)) if dns_address else None
        defaults = MemberOptions()
        watch_server = getattr(args, "hub_watch_server", "")
        if watch_server:
            parse_target(watch_server)  # a bad address exits 2 now, not at join
        options = MemberOptions(
            dns=dns,
            import_workers=getattr(args, "import_workers", defaults.import_workers),
            export_workers=getattr(args, "export_workers", defaults.export_workers),
            session_overrides={"watch_server": watch_server} if watch_server else {},
        )
    except ValueError as exc:
        print(f"mchub member: {exc}", file=sys.stderr)
        return 2
    qps = getattr(args, "kube_api_qps", DEFAULT_KUBE_API_QPS)
    burst = getattr(args, "kube_api_burst", DEFAULT_KUBE_API_BURST)
    try:
        client = await connect(args.kubeconfig, args.context, qps=qps, burst=burst)
    except KubeError as exc:
        print(f"mchub member: {exc}", file=sys.stderr)
        return 2
    app = MemberApp(client, args.namespace, options=options)
    health = HealthServer(args.health_address, app.readiness, app.registry) if args.health_address else None
    try:
        try:
            await app.start()
        except (ConfigError, PermanentError, KubeError, OSError) as exc:
            print(f"mchub member: {exc}", file=sys.stderr)
            return 2
        # What start built (informer caches, protobuf descriptors, the first imports) lives as long
        # as the process: keep it out of full collections, which would scan it again and again.
        # Collect first: garbage frozen with it would never be freed.
        gc.collect()
        gc.freeze()
        print(f"member: watching Namespace {args.namespace} of {client.host} for its ClusterSet", flush=True)
        if app.dns is not None:
            print(f"member: clusterset.local DNS on {app.dns.address} (UDP and TCP)", flush=True)
        if health is not None:
            await health.start()
            print(f"member: health on {args.health_address} (/healthz, /readyz)", flush=True)
        await until_stop_signal()
        return 0
    finally:
        if health is not None:
            await health.stop()
        await app.stop()
        await client.close()


def run_member(args: argparse.Namespace) -> int:
    with trace.from_environment():
        return asyncio.run(serve(args))
