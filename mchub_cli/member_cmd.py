"""`mchub member`: run the member controller of one cluster until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path
from typing import Any

from kube.client import connect
from kube.errors import KubeError, PermanentError
from mcapi.config import ConfigError
from mcapi.names import DEFAULT_MEMBER_NAMESPACE
from member.app import MemberApp
from member.health import HealthServer


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
        help="serve /healthz and /readyz on HOST:PORT (default: off; the Deployment uses 0.0.0.0:8081)",
    )
    parser.set_defaults(func=run_member)


async def serve(args: argparse.Namespace) -> int:
    try:
        client = await connect(args.kubeconfig, args.context)
    except KubeError as exc:
        print(f"mchub member: {exc}", file=sys.stderr)
        return 2
    app = MemberApp(client, args.namespace)
    health = HealthServer(args.health_address, app.readiness) if args.health_address else None
    try:
        try:
            await app.start()
        except (ConfigError, PermanentError, KubeError) as exc:
            print(f"mchub member: {exc}", file=sys.stderr)
            return 2
        print(f"member: watching Namespace {args.namespace} of {client.host} for its ClusterSet", flush=True)
        if health is not None:
            await health.start()
            print(f"member: health on {args.health_address} (/healthz, /readyz)", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        return 0
    finally:
        if health is not None:
            await health.stop()
        await app.stop()
        await client.close()


def run_member(args: argparse.Namespace) -> int:
    return asyncio.run(serve(args))
