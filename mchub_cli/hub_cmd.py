"""`mchub hub`: run the leader hub, and manage its member tokens."""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hub.app import HubApp
from hub.auth.tokens import TokenError, TokenStore
from hub.config import (
    MIRROR_NEEDS_THE_WRITER,
    MIRROR_QPS,
    HubConfig,
    HubConfigError,
    KubeStoreConfig,
    MirrorConfig,
    SqliteStoreConfig,
    StoreConfig,
)
from hub.merge.global_addressing import DEFAULT_BLOCK_PREFIX
from kube.leader import LeaseTiming
from kube.waiting import until_stop_signal
from mcapi import trace

Register = Callable[[Any], None]


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser("hub", help="run the leader hub (gRPC + REST)")
    _common(parser)
    parser.add_argument("--grpc-address", default="127.0.0.1:50051", help="gRPC HOST:PORT (default 127.0.0.1:50051)")
    parser.add_argument("--rest-address", default="127.0.0.1:8080", help="REST HOST:PORT (default 127.0.0.1:8080)")
    parser.add_argument(
        "--insecure", action="store_true", help="serve gRPC and REST without TLS (only on loopback addresses)"
    )
    parser.add_argument("--tls-cert", type=Path, help="serving certificate PEM (default: generated)")
    parser.add_argument("--tls-key", type=Path, help="serving key PEM (default: generated)")
    parser.add_argument("--tls-san", action="append", default=[], help="extra SAN for the generated cert")
    parser.add_argument("--clusterset-id", default="test-clusterset", help="ClusterSet ID (default test-clusterset)")
    parser.add_argument("--leader-cluster-id", default="leader", help="this leader's cluster ID (default leader)")
    parser.add_argument("--strict-ports", action="store_true", help="Antrea's older rule: exporters' ports must match")
    parser.add_argument(
        "--global-cidr",
        default=os.environ.get("MCHUB_GLOBAL_CIDR", ""),
        help="the ClusterSet's global CIDR, e.g. 242.0.0.0/8: members whose Service or Pod CIDRs overlap "
        "another's are reached through a block of it (default $MCHUB_GLOBAL_CIDR, else off)",
    )
    parser.add_argument(
        "--global-block-prefix",
        default=os.environ.get("MCHUB_GLOBAL_BLOCK_PREFIX") or str(DEFAULT_BLOCK_PREFIX),
        help=f"prefix length of each member's global block (default $MCHUB_GLOBAL_BLOCK_PREFIX, "
        f"else {DEFAULT_BLOCK_PREFIX}: 4096 addresses)",
    )
    parser.add_argument(
        "--store", choices=["sqlite", "kube"], default="sqlite", help="where state lives (default sqlite)"
    )
    parser.add_argument("--kubeconfig", type=Path, help="kube store: cluster to keep CRs in (default: in-cluster)")
    parser.add_argument(
        "--namespace", default="antrea-multicluster", help="the leader Namespace (kube store, or the mirror's)"
    )
    parser.add_argument(
        "--mirror-kubeconfig",
        type=Path,
        help="sqlite store: mirror the hub's state into CRs of the leader Namespace of this cluster "
        "(kubectl get resourceexport,resourceimport,memberclusterannounce) and take in the "
        "AntreaClusterNetworkPolicy ResourceExports applied there",
    )
    parser.add_argument("--mirror-qps", type=float, default=50.0, help="the mirror's requests per second (default 50)")
    parser.add_argument("--lease-duration", type=float, default=15.0, help="kube store: Lease duration, s")
    parser.add_argument("--renew-deadline", type=float, default=10.0, help="kube store: leader renew deadline, s")
    parser.add_argument("--retry-period", type=float, default=2.0, help="kube store: election retry period, s")
    parser.add_argument("--replica-id", help="kube store: this replica's Lease identity (default: host name)")
    parser.add_argument(
        "--follow",
        action="store_true",
        help="sqlite store: serve watches and reads from the change log of a --data-dir another hub writes",
    )
    parser.add_argument(
        "--leader-address", default="", help="where members send writes, named when a follower refuses one"
    )
    parser.add_argument(
        "--pod-name",
        default="",
        help="kube store: this Pod, labelled mchub.antrea.io/hub-role=leader|follower",
    )
    parser.set_defaults(func=run_hub)

    tokens = parser.add_subparsers(dest="hub_command", metavar="SUBCOMMAND")
    token = tokens.add_parser("token", help="member tokens")
    token_sub = token.add_subparsers(dest="token_command", required=True, metavar="ACTION")
    create = token_sub.add_parser("create", help="issue a token for a member cluster")
    _common(create)
    create.add_argument("--cluster-id", required=True, help="the member cluster the token speaks for")
    create.add_argument("--name", help="token name (default member-<cluster-id>)")
    create.set_defaults(func=token_create)
    listing = token_sub.add_parser("list", help="list tokens (names only; tokens are stored hashed)")
    _common(listing)
    listing.set_defaults(func=token_list)
    delete = token_sub.add_parser("delete", help="revoke a token")
    _common(delete)
    delete.add_argument("name")
    delete.set_defaults(func=token_delete)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=Path("mchub-data"), help="state dir (default ./mchub-data)")


def _store(args: argparse.Namespace) -> StoreConfig:
    """Where the hub keeps its state, from the flags; HubConfigError for flags that do not go together."""
    try:
        lease = LeaseTiming(args.lease_duration, args.renew_deadline, args.retry_period)
    except ValueError:
        raise HubConfigError("lease timing needs 0 < retry period < renew deadline < lease duration") from None
    if args.mirror_qps <= 0:
        raise HubConfigError(MIRROR_QPS)
    mirror = MirrorConfig(args.mirror_kubeconfig, args.mirror_qps) if args.mirror_kubeconfig is not None else None
    if args.store == "sqlite":
        return SqliteStoreConfig(follow=args.follow, mirror=mirror)
    if mirror is not None:
        raise HubConfigError(MIRROR_NEEDS_THE_WRITER)
    if args.follow:
        raise HubConfigError("--follow is for the sqlite store; kube-store replicas follow by themselves")
    return KubeStoreConfig(
        kubeconfig=args.kubeconfig,
        lease=lease,
        pod_name=args.pod_name,
        **({"replica_id": args.replica_id} if args.replica_id else {}),
    )


def _block_prefix(text: str) -> int:
    try:
        return int(str(text).strip().lstrip("/"))
    except ValueError:
        raise HubConfigError(f"global block prefix {text!r} is not a prefix length (a number like 20)") from None


def _config(args: argparse.Namespace) -> HubConfig:
    return HubConfig(
        data_dir=args.data_dir,
        grpc_address=args.grpc_address,
        rest_address=args.rest_address,
        insecure=args.insecure,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        tls_sans=tuple(args.tls_san),
        cluster_set_id=args.clusterset_id,
        leader_cluster_id=args.leader_cluster_id,
        strict_ports=args.strict_ports,
        global_cidr=args.global_cidr,
        global_block_prefix=_block_prefix(args.global_block_prefix),
        namespace=args.namespace,
        store=_store(args),
        leader_address=args.leader_address,
    )


async def serve(app: HubApp) -> None:
    await app.start()
    # What start loaded (the store's exports and imports, protobuf descriptors) lives as long as
    # the process: keep it out of full collections, which would scan it again and again.
    # Collect first: garbage frozen with it would never be freed.
    gc.collect()
    gc.freeze()
    print(f"hub: gRPC on {app.grpc_target} ({'plaintext' if app.config.insecure else 'TLS'})", flush=True)
    if app.ca_cert is not None:
        print(f"hub: members trust CA {app.ca_cert}", flush=True)
    print(f"hub: REST on {app.rest_url}", flush=True)
    print(f"hub: admin token in {app.config.admin_token_file}", flush=True)
    if app.kube is not None:
        print(
            f"hub: state in CRs of Namespace {app.config.namespace}; watches as it follows, writes when it leads",
            flush=True,
        )
    if (mirror := app.config.mirror) is not None:
        print(
            f"hub: mirrors into Namespace {app.config.namespace} of {mirror.kubeconfig} "
            "(kubectl get resourceexport,resourceimport,memberclusterannounce)",
            flush=True,
        )
    if app.config.follows:
        print(f"hub: following the hub that writes {app.config.data_dir}; watches and reads only", flush=True)
    try:
        await until_stop_signal()
    finally:
        await app.stop()


def run_hub(args: argparse.Namespace) -> int:
    try:
        app = HubApp(_config(args))
    except HubConfigError as exc:
        print(f"mchub hub: {exc}", file=sys.stderr)
        return 2
    with trace.from_environment():
        asyncio.run(serve(app))
    return 0


def _tokens(args: argparse.Namespace) -> TokenStore:
    return TokenStore(args.data_dir / "tokens.db")


def token_create(args: argparse.Namespace) -> int:
    store = _tokens(args)
    try:
        token = store.create(args.name or f"member-{args.cluster_id}", cluster_id=args.cluster_id)
    except TokenError as exc:
        print(f"mchub hub token create: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()
    print(token)
    return 0


def token_list(args: argparse.Namespace) -> int:
    store = _tokens(args)
    try:
        for info in store.list():
            who = "admin" if info.admin else info.cluster_id
            print(f"{info.name}\t{who}\t{info.created.isoformat()}")
    finally:
        store.close()
    return 0


def token_delete(args: argparse.Namespace) -> int:
    store = _tokens(args)
    try:
        if not store.delete(args.name):
            print(f"mchub hub token delete: no token named {args.name!r}", file=sys.stderr)
            return 1
    finally:
        store.close()
    return 0
