"""`mchub`: one console script, one subcommand per process kind."""

from __future__ import annotations

import argparse
import sys

from mchub_cli import hub_cmd
from mchub_cli.logs import configure_logging


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mchub", description="Antrea Multi-cluster around a leader hub")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR (default INFO)")
    parser.add_argument("--log-format", default="text", choices=["text", "json"], help="log line format")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    hub_cmd.register(sub)
    for register in _optional_commands():
        register(sub)
    return parser


def _optional_commands() -> list[hub_cmd.Register]:
    """Subcommands of the other process kinds, registered when present."""
    found: list[hub_cmd.Register] = []
    for module_name in (
        "mchub_cli.sandbox_cmd",
        "mchub_cli.member_cmd",
        "mchub_cli.agent_cmd",
        "mchub_cli.demo_cmd",
    ):
        try:
            module = __import__(module_name, fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        found.append(module.register)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.log_level, args.log_format)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
