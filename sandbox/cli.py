"""`mchub sandbox`: run one sandbox cluster until interrupted."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from kube.waiting import until_stop_signal
from sandbox.server import SandboxServer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", required=True, help="cluster name (also the kubeconfig context name)")
    parser.add_argument("--service-cidr", default="10.96.0.0/12", help="range ClusterIPs are allocated from")
    parser.add_argument("--port", type=int, default=0, help="HTTPS port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--work-dir", type=Path, default=None, help="directory for the CA and kubeconfig")


def _announce(server: SandboxServer) -> None:
    print(f"sandbox {server.name} serving at {server.url}", flush=True)
    print(f"kubeconfig: {server.kubeconfig_path}", flush=True)


async def serve(args: argparse.Namespace, on_started: Callable[[SandboxServer], None]) -> int:
    """Run the sandbox the arguments describe until SIGINT/SIGTERM or cancellation."""
    server = SandboxServer(name=args.name, service_cidr=args.service_cidr, work_dir=args.work_dir, port=args.port)
    await server.start()
    on_started(server)
    try:
        await until_stop_signal()
    finally:
        await server.stop()
    return 0


async def run(args: argparse.Namespace) -> int:
    return await serve(args, _announce)
