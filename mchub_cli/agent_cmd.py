"""`mchub agent`: run the multicluster datapath agent of one Node until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from agent.config import AgentConfig, load_agent_config
from agent.errors import ConfigError
from agent.main import DEFAULT_KEY_PATH, run_agent
from agent.runner import DEFAULT_RESYNC_INTERVAL
from kube.client import connect
from kube.errors import KubeError
from kube.probe_server import parse_address
from kube.waiting import on_stop_signals
from mcapi.names import DEFAULT_MEMBER_NAMESPACE

DEFAULT_PROBE_ADDRESS = "127.0.0.1:51823"
"""Loopback: a hostNetwork Pod's kubelet probes reach it (httpGet host 127.0.0.1), the network does not."""


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "agent", help="run the datapath agent of one Node (tunnels, routes, SNAT, WireGuard to remote Gateways)"
    )
    parser.add_argument("--kubeconfig", type=Path, help="the member cluster (default: in-cluster)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("--node", required=True, help="the Kubernetes Node this agent runs on")
    parser.add_argument(
        "--config", type=Path, help="antrea-agent.conf (or its multicluster section); default: gateway disabled"
    )
    parser.add_argument(
        "--namespace",
        default=DEFAULT_MEMBER_NAMESPACE,
        help=f"the member Namespace with the Gateway and ClusterInfoImports (default {DEFAULT_MEMBER_NAMESPACE})",
    )
    parser.add_argument("--netns", help="program this named network namespace instead of the agent's own (tests)")
    parser.add_argument(
        "--key-path",
        type=Path,
        default=DEFAULT_KEY_PATH,
        help=f"WireGuard private key file (default {DEFAULT_KEY_PATH})",
    )
    parser.add_argument("--cleanup", action="store_true", help="remove everything the agent created when it stops")
    parser.add_argument(
        "--probe-address",
        "--metrics-address",  # its earlier name, which served the same endpoints
        dest="probe_address",
        type=_probe_address,
        default=DEFAULT_PROBE_ADDRESS,
        metavar="HOST:PORT",
        help="serve /healthz (alive), /readyz (datapath of the latest inputs in place, else 503 with the reason) "
        f"and /metrics on http://HOST:PORT, unauthenticated; '' serves none (default {DEFAULT_PROBE_ADDRESS})",
    )
    parser.add_argument(
        "--resync-interval",
        type=_positive_seconds,
        default=DEFAULT_RESYNC_INTERVAL,
        metavar="SECONDS",
        help="apply unchanged inputs again this often, undoing changes made from outside to the agent's "
        f"devices, routes, rules and nftables tables (default {DEFAULT_RESYNC_INTERVAL:g})",
    )
    parser.set_defaults(func=run_agent_command)


def _probe_address(value: str) -> str:
    if value:
        try:
            parse_address(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc
    return value


def _positive_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {value!r}")
    return seconds


async def serve(args: argparse.Namespace) -> int:
    try:
        config = load_agent_config(args.config) if args.config else AgentConfig()
    except ConfigError as exc:
        print(f"mchub agent: {exc}", file=sys.stderr)
        return 2
    try:
        client = await connect(args.kubeconfig, args.context)
    except KubeError as exc:
        print(f"mchub agent: {exc}", file=sys.stderr)
        return 2
    try:
        task = asyncio.create_task(
            run_agent(
                client,
                args.node,
                config,
                namespace=args.namespace,
                netns=args.netns,
                cleanup_on_stop=args.cleanup,
                key_path=args.key_path,
                probe_address=args.probe_address,
                resync_interval=args.resync_interval,
            )
        )
        with on_stop_signals(task.cancel):
            print(f"agent: Node {args.node}, watching Namespace {args.namespace} of {client.host}", flush=True)
            return await _exit_code(task)
    finally:
        await client.close()


async def _exit_code(task: asyncio.Task[None]) -> int:
    """0 when the agent stopped on a signal, 2 (with one line each) on its configuration or
    API errors, which KubeAgent.run's TaskGroup delivers inside an ExceptionGroup."""
    code = 0
    try:
        await task
    except* asyncio.CancelledError:
        pass
    except* (ConfigError, KubeError) as group:
        for exc in _leaves(group):
            print(f"mchub agent: {exc}", file=sys.stderr)
        code = 2
    return code


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        found += _leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
    return found


def run_agent_command(args: argparse.Namespace) -> int:
    return asyncio.run(serve(args))
