"""`mcctl`: the operator's CLI of mchub, with the verbs of `antctl mc` (argument parsing and dispatch)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from ctl import clusterinfo, commands, dnsconfig, inventory
from ctl.errors import EXIT_CODES_HELP, EXIT_FAILED, EXIT_NOT_FOUND, CtlError
from ctl.output import FORMATS, note
from kube.errors import ConnectionFailed, Forbidden, KubeError, NotFound, Unauthorized
from mcapi import names

Handler = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]

EPILOG = f"""environment:
  KUBECONFIG     the cluster to talk to when --kubeconfig is not given
  MCHUB_HUB_URL  the hub's REST facade (like --hub-url), e.g. https://127.0.0.1:8080
  MCHUB_TOKEN    the bearer token for the hub (like --token)
  MCHUB_HUB_CA   the hub's CA certificate (like --hub-ca-file), e.g. mchub-data/tls/ca.crt

{EXIT_CODES_HELP}
"""

LEADER_NS = names.DEFAULT_LEADER_NAMESPACE
MEMBER_NS = names.DEFAULT_MEMBER_NAMESPACE


def _access_flags(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """--kubeconfig and hub access, accepted before or after the verb."""
    default = None if top else argparse.SUPPRESS
    parser.add_argument(
        "--kubeconfig", type=Path, default=default, help="kubeconfig of the cluster (default $KUBECONFIG)"
    )
    parser.add_argument(
        "--hub-url", default=default, help="the hub's REST URL, https://HOST:PORT (default $MCHUB_HUB_URL)"
    )
    parser.add_argument("--token", default=default, help="bearer token for the hub (default $MCHUB_TOKEN)")
    parser.add_argument("--token-file", type=Path, default=default, help="file holding the hub token")
    parser.add_argument(
        "--hub-ca-file",
        type=Path,
        default=default,
        help="the hub's CA certificate (its data dir's tls/ca.crt): verifies the hub's REST certificate "
        "(default $MCHUB_HUB_CA, else the system's trust store) and is the ca.crt of token Secrets mcctl writes",
    )


class _Builder:
    def __init__(self) -> None:
        self.root = argparse.ArgumentParser(
            prog="mcctl",
            description="Operate an mchub ClusterSet (Antrea Multi-cluster, leader hub); verbs after `antctl mc`.",
            epilog=EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _access_flags(self.root, top=True)
        self.verbs = self.root.add_subparsers(dest="verb", required=True, metavar="VERB")

    def leaf(
        self, group: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str, handler: Handler
    ) -> argparse.ArgumentParser:
        parser = group.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=EXIT_CODES_HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _access_flags(parser, top=False)
        parser.set_defaults(handler=handler)
        return parser


def _output_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", choices=FORMATS, default="table", help="table (default), json or yaml")


def _namespace(parser: argparse.ArgumentParser, default: str | None, what: str, all_namespaces: bool = False) -> None:
    shown = f" (default {default})" if default else ""
    parser.add_argument("-n", "--namespace", default=default, help=f"Namespace of the {what}{shown}")
    if all_namespaces:
        parser.add_argument("-A", "--all-namespaces", action="store_true", help="across all Namespaces")


def build_parser() -> argparse.ArgumentParser:
    b = _Builder()
    get = b.verbs.add_parser(
        "get", help="print ClusterSets, exports, imports, member tokens, join config, cluster inventory"
    )
    get_kinds = get.add_subparsers(dest="kind", required=True, metavar="KIND")

    p = b.leaf(get_kinds, "clusterset", "print ClusterSets (one row per cluster condition)", commands.get_clusterset)
    p.add_argument("name", nargs="?", help="ClusterSet ID")
    _namespace(p, None, f"ClusterSets (default {MEMBER_NS} and {LEADER_NS})", all_namespaces=True)
    _output_format(p)

    for kind, handler, what in (
        ("resourceexport", commands.get_resourceexport, "exports"),
        ("resourceimport", commands.get_resourceimport, "imports"),
    ):
        p = b.leaf(get_kinds, kind, f"print the hub's {what} (--hub-url) or the leader's {kind} CRs", handler)
        p.add_argument("name", nargs="?", help=f"{kind} name")
        p.add_argument(
            "--cluster-id",
            default="",
            help="only this member's" if kind == "resourceexport" else "only those delivered to this member",
        )
        _namespace(p, None, f"{kind}s (default {LEADER_NS}; with --hub-url all)", all_namespaces=True)
        if kind == "resourceimport":  # wide: how each member fared applying it
            p.add_argument(
                "-o",
                "--output",
                choices=(*FORMATS, "wide"),
                default="table",
                help="table (default), wide (adds OUTCOMES per member), json or yaml",
            )
        else:
            _output_format(p)

    p = b.leaf(
        get_kinds, "membertoken", "print member tokens mcctl created in the leader cluster", commands.get_membertoken
    )
    p.add_argument("name", nargs="?", help="member token name")
    _namespace(p, LEADER_NS, "member tokens", all_namespaces=True)
    _output_format(p)

    p = b.leaf(get_kinds, "joinconfig", "print the ClusterSetJoinConfig a member joins with", commands.get_joinconfig)
    p.add_argument("--member-token", default="", help="also print this member token's Secret manifest")
    p.add_argument(
        "--hub-server", default="", help="the hub's gRPC URL, https://HOST:PORT (default: what init recorded)"
    )
    _namespace(p, LEADER_NS, "leader ClusterSet")
    dnsconfig.register(b.leaf, get_kinds)
    inventory.register(b.leaf, get_kinds)
    clusterinfo.register(b.leaf, get_kinds)

    create = b.verbs.add_parser("create", help="create a member token")
    create_kinds = create.add_subparsers(dest="kind", required=True, metavar="KIND")
    p = b.leaf(create_kinds, "membertoken", "create a member token in the leader cluster", commands.create_membertoken)
    p.add_argument("name", help="member token name")
    p.add_argument("--cluster-id", required=True, help="the member cluster this token speaks for ('*': shared)")
    p.add_argument("-o", "--output-file", type=Path, help="save the member's token Secret manifest to this file")
    _namespace(p, LEADER_NS, "leader ClusterSet")

    delete = b.verbs.add_parser("delete", help="delete a member token, or remove a member from the ClusterSet")
    delete_kinds = delete.add_subparsers(dest="kind", required=True, metavar="KIND")
    p = b.leaf(delete_kinds, "membertoken", "delete a member token mcctl created", commands.delete_membertoken)
    p.add_argument("name", help="member token name")
    _namespace(p, LEADER_NS, "leader ClusterSet")
    p = b.leaf(
        delete_kinds,
        "member",
        "remove a member that died without leaving (its announce, exports and what they made) through the hub "
        "(--hub-url, admin token); lists what goes and asks first",
        commands.delete_member,
    )
    p.add_argument("cluster_id", metavar="CLUSTER_ID", help="the member's cluster ID")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask (needed when stdin is not a terminal)")
    p.add_argument(
        "--keep-tokens", action="store_true", help="do not revoke the hub tokens naming this cluster (it may rejoin)"
    )

    p = b.leaf(b.verbs, "init", "initialize the ClusterSet in the leader cluster", commands.init)
    p.add_argument("--clusterset", required=True, help="ClusterSet ID")
    p.add_argument("--clusterid", required=True, help="the leader's cluster ID")
    p.add_argument("--hub-server", default="", help="the hub's gRPC URL members reach, https://HOST:PORT")
    p.add_argument("-j", "--join-config-file", type=Path, help="save the join config (with the default token) here")
    p.add_argument("--no-create-token", action="store_true", help="do not create the default member token")
    _namespace(p, LEADER_NS, "leader ClusterSet")

    p = b.leaf(b.verbs, "join", "join the ClusterSet from a member cluster", commands.join)
    p.add_argument("-f", "--config-file", type=Path, help="ClusterSetJoinConfig file (from `mcctl init -j`)")
    p.add_argument("--clusterset", default="", help="ClusterSet ID")
    p.add_argument("--clusterid", default="", help="this member's cluster ID")
    p.add_argument("--leader-clusterid", default="", help="the leader's cluster ID")
    p.add_argument("--leader-namespace", default="", help=f"the leader Namespace (usually {LEADER_NS})")
    p.add_argument("--leader-apiserver", default="", help="the hub's gRPC URL, https://HOST:PORT")
    p.add_argument("--token-secret-name", default="", help="an existing token Secret in this cluster")
    p.add_argument("--token-secret-file", type=Path, help="a token Secret manifest to create")
    p.add_argument(
        "--wait", type=float, default=0.0, metavar="SECONDS", help="wait until the member is Ready (default: no)"
    )
    _namespace(p, MEMBER_NS, "member ClusterSet")

    p = b.leaf(b.verbs, "leave", "leave the ClusterSet from a member cluster", commands.leave)
    p.add_argument("--clusterset", default="", help="ClusterSet ID (default: the one in the Namespace)")
    _namespace(p, MEMBER_NS, "member ClusterSet")

    p = b.leaf(
        b.verbs,
        "destroy",
        "delete the ClusterSet: on the hub (--hub-url, admin token; SQLite store) and/or in the leader cluster "
        "(its ClusterSet CR, waiting until the hub deleted its CRs, and the member tokens)",
        commands.destroy,
    )
    p.add_argument("--clusterset", required=True, help="ClusterSet ID")
    p.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for the hub to delete its CRs (default 30)",
    )
    _namespace(p, LEADER_NS, "leader ClusterSet")

    p = b.leaf(b.verbs, "deploy", "apply the leader's or a member's manifests", commands.deploy)
    p.add_argument("target", choices=("leadercluster", "membercluster"))
    p.add_argument(
        "-f", "--manifest", type=Path, help="manifest file (default deploy/build/antrea-multicluster-<role>.yml)"
    )
    _namespace(p, None, f"deployment (default {LEADER_NS} for a leader, {MEMBER_NS} for a member)")

    for name, handler, help_text in (
        ("verify", commands.verify, "check the ClusterSet end to end (exit 1 on any FAIL)"),
        ("diagnose", commands.diagnose, "collect the hub's and the members' state into a report directory"),
    ):
        p = b.leaf(b.verbs, name, help_text, handler)
        p.add_argument("--member-kubeconfig", type=Path, action="append", default=[], help="a member cluster (repeat)")
        p.add_argument(
            "--member-namespace", default=MEMBER_NS, help=f"the members' Multi-cluster Namespace (default {MEMBER_NS})"
        )
        _output_format(p)
    verify = b.verbs.choices["verify"]
    verify.add_argument(
        "--test-namespace", default="default", help="where the test Service is exported (default default)"
    )
    verify.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the round trip (default 30)")
    b.verbs.choices["diagnose"].add_argument(
        "--output-dir", type=Path, help="report directory (default ./mcctl-diagnose-<time>)"
    )
    return b.root


def _kube_error_code(exc: KubeError) -> tuple[int, str]:
    if isinstance(exc, ConnectionFailed):
        return EXIT_NOT_FOUND, f"cannot reach the cluster: {exc} (check --kubeconfig)"
    if isinstance(exc, NotFound):
        return EXIT_NOT_FOUND, f"not found: {exc.message or exc}"
    if isinstance(exc, Unauthorized | Forbidden):
        return EXIT_FAILED, f"the cluster refused the request: {exc} (check the kubeconfig's credentials)"
    return EXIT_FAILED, str(exc)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 0
    handler: Handler = args.handler
    try:
        return asyncio.run(handler(args))
    except CtlError as exc:
        note(f"error: {exc}")
        return exc.exit_code
    except KubeError as exc:
        code, message = _kube_error_code(exc)
        note(f"error: {message}")
        return code
    except KeyboardInterrupt:
        note("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
