"""`mchub sandbox --name east`: run one local Kubernetes-API-compatible cluster."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from sandbox import cli


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser("sandbox", help="run a local Kubernetes-API-compatible cluster")
    cli.add_arguments(parser)
    parser.set_defaults(func=run_sandbox)


def run_sandbox(args: argparse.Namespace) -> int:
    return asyncio.run(cli.run(args))
