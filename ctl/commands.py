"""One handler per verb: open what the verb needs, call the module doing the work, print."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from ctl import deploy as deploy_mod
from ctl import diagnose as diagnose_mod
from ctl import exchange, leader, member, removal, tokens
from ctl import verify as verify_mod
from ctl.access import HubAccess, hub_access, hub_ca_file, open_cluster
from ctl.clusterset import CLUSTERSET_HEADER, clusterset_rows, list_clustersets
from ctl.errors import EXIT_FAILED, EXIT_OK, NotFoundError, UsageError
from ctl.members import close_members, open_members
from ctl.output import note, print_objects, say, write_private
from kube.client import KubeClient
from kube.errors import NotFound
from mcapi import names
from mcapi.resources import CLUSTER_SETS


@asynccontextmanager
async def cluster(args: argparse.Namespace) -> AsyncIterator[KubeClient]:
    client = await open_cluster(args.kubeconfig)
    try:
        yield client
    finally:
        await client.close()


def _hub(args: argparse.Namespace, *, required: bool) -> HubAccess | None:
    return hub_access(args.hub_url, args.token, args.token_file, required=required, ca_file=args.hub_ca_file)


def _namespaces(args: argparse.Namespace) -> str | None:
    return None if getattr(args, "all_namespaces", False) else args.namespace


async def get_clusterset(args: argparse.Namespace) -> int:
    if args.all_namespaces:
        namespaces = None
    elif args.namespace:
        namespaces = [args.namespace]
    else:
        namespaces = [names.DEFAULT_MEMBER_NAMESPACE, names.DEFAULT_LEADER_NAMESPACE]
    async with cluster(args) as client:
        if args.name:
            found = []
            for ns in namespaces or [None]:
                try:
                    found.append(await client.get(CLUSTER_SETS, args.name, ns))
                except NotFound:
                    continue
            if not found:
                raise NotFoundError(
                    f"no ClusterSet {args.name!r} in {_where(namespaces)}: `mcctl get clusterset -A` lists them"
                )
            data: object = found[0]
            rows_source = found
        else:
            items = await list_clustersets(client, namespaces)
            if not items:
                raise NotFoundError(
                    f"no ClusterSet in {_where(namespaces)}: run `mcctl join` (member) or `mcctl init` (leader) first"
                )
            data, rows_source = items, items
    print_objects(data, args.output, CLUSTERSET_HEADER, lambda _: clusterset_rows(rows_source))
    return EXIT_OK


def _where(namespaces: list[str] | None) -> str:
    if namespaces is None:
        return "any namespace"
    return ("namespace " if len(namespaces) == 1 else "namespaces ") + ", ".join(namespaces)


async def _get_exchange(args: argparse.Namespace, exports: bool) -> int:
    hub = _hub(args, required=False)
    # -n is the Namespace of the CRs; the leader's by default, except that the hub's items are all shown.
    if args.all_namespaces:
        namespace = None
    else:
        namespace = args.namespace or (None if hub is not None else names.DEFAULT_LEADER_NAMESPACE)
    query = exchange.Query(args.name, namespace, args.cluster_id)
    if hub is None and args.cluster_id and not exports:
        raise UsageError(
            "--cluster-id on resourceimports needs the hub (--hub-url): the CRs do not say who receives them"
        )
    fetch = exchange.resource_exports if exports else exchange.resource_imports
    if hub is not None:
        data = await fetch(None, hub, query)
    else:
        async with cluster(args) as client:
            data = await fetch(client, None, query)
    if isinstance(data, list) and not data and args.output == "table":
        note(f"No resources found{f' in Namespace {query.namespace}' if query.namespace else ''}")
        return EXIT_OK
    if exports:
        print_objects(data, args.output, exchange.EXPORT_HEADER, exchange.export_rows)
        return EXIT_OK
    if args.output == "wide":
        print_objects(data, "table", exchange.IMPORT_WIDE_HEADER, exchange.import_rows_wide)
    else:
        print_objects(data, args.output, exchange.IMPORT_HEADER, exchange.import_rows)
    if args.output in ("table", "wide"):  # members that could not apply an import, under the table
        for failure in exchange.import_failures(data):
            note(failure)
    return EXIT_OK


async def get_resourceexport(args: argparse.Namespace) -> int:
    return await _get_exchange(args, exports=True)


async def get_resourceimport(args: argparse.Namespace) -> int:
    return await _get_exchange(args, exports=False)


async def get_membertoken(args: argparse.Namespace) -> int:
    async with cluster(args) as client:
        if args.name:
            secrets = [await tokens.get_token_secret(client, args.name, args.namespace)]
        else:
            secrets = await tokens.list_token_secrets(client, _namespaces(args))
    if not secrets and args.output == "table":
        note(f"No token found{f' in Namespace {args.namespace}' if not args.all_namespaces else ''}")
        return EXIT_OK
    if args.output == "table":
        data: object = secrets
    else:
        # As antctl: json/yaml print the member's token Secret manifest (type Opaque).
        manifests = [tokens.member_secret_manifest(s, names.DEFAULT_MEMBER_NAMESPACE) for s in secrets]
        data = manifests[0] if args.name else manifests
    print_objects(data, args.output, tokens.TOKEN_HEADER, lambda _: tokens.token_rows(secrets))
    return EXIT_OK


async def get_joinconfig(args: argparse.Namespace) -> int:
    async with cluster(args) as client:
        text = await leader.join_config(
            client, args.namespace, args.member_token, args.hub_server, hub_ca_file(args.hub_ca_file)
        )
    print(text, end="")
    return EXIT_OK


async def create_membertoken(args: argparse.Namespace) -> int:
    hub_ca = tokens.read_hub_ca(hub_ca_file(args.hub_ca_file))
    async with cluster(args) as client:
        secret = await tokens.create_member_token(client, args.name, args.namespace, args.cluster_id)
    say(f"Member token {args.name} created in Namespace {args.namespace} for cluster {args.cluster_id}")
    if args.output_file is not None:
        manifest = tokens.member_secret_manifest(secret, names.DEFAULT_MEMBER_NAMESPACE, hub_ca)
        write_private(args.output_file, tokens.secret_manifest_text(manifest))
        say(f"Saved the token Secret manifest to {args.output_file}: use it with `mcctl join --token-secret-file`")
    return EXIT_OK


async def delete_membertoken(args: argparse.Namespace) -> int:
    async with cluster(args) as client:
        deleted = await tokens.delete_member_token(client, args.name, args.namespace)
    for ref in deleted:
        say(f"{ref} deleted")
    if not deleted:
        note(f"member token {args.name} exists but was not created by mcctl/antctl: left alone")
        return EXIT_FAILED
    return EXIT_OK


async def delete_member(args: argparse.Namespace) -> int:
    removal.check_cluster_id(args.cluster_id)
    hub = _hub(args, required=True)
    assert hub is not None
    removed = await removal.delete_member(hub, args.cluster_id, yes=args.yes, keep_tokens=args.keep_tokens)
    return EXIT_OK if removed else EXIT_FAILED


async def init(args: argparse.Namespace) -> int:
    request = leader.InitRequest(
        clusterset_id=args.clusterset,
        cluster_id=args.clusterid,
        namespace=args.namespace,
        hub_server=args.hub_server,
        join_config_file=args.join_config_file,
        hub_ca_file=hub_ca_file(args.hub_ca_file),
        create_token=not args.no_create_token,
    )
    async with cluster(args) as client:
        await leader.init(client, request)
    return EXIT_OK


async def join(args: argparse.Namespace) -> int:
    flags = member.JoinFlags(
        config_file=args.config_file,
        clusterset=args.clusterset,
        clusterid=args.clusterid,
        leader_clusterid=args.leader_clusterid,
        leader_namespace=args.leader_namespace,
        leader_apiserver=args.leader_apiserver,
        token_secret_name=args.token_secret_name,
        token_secret_file=args.token_secret_file,
        namespace=args.namespace,
        wait=args.wait,
    )
    config = member.resolve(flags)
    async with cluster(args) as client:
        await member.join(client, config, args.wait)
    return EXIT_OK


async def leave(args: argparse.Namespace) -> int:
    async with cluster(args) as client:
        await member.leave(client, args.clusterset or None, args.namespace)
    return EXIT_OK


async def destroy(args: argparse.Namespace) -> int:
    """On the hub (--hub-url) and/or in the leader cluster (a kubeconfig): a hub with the SQLite
    store ends its ClusterSet through REST; one with the Kubernetes store follows the CR."""
    if args.timeout < 0:
        raise UsageError("--timeout must not be negative")
    hub = _hub(args, required=False)
    on_hub = await leader.end_on_hub(hub, args.clusterset) if hub is not None else ""
    if on_hub in ("ended", "gone") and args.kubeconfig is None and not os.environ.get("KUBECONFIG"):
        if on_hub == "gone":
            raise NotFoundError(f"ClusterSet {args.clusterset!r} was deleted already: nothing to destroy")
        return EXIT_OK
    async with cluster(args) as client:
        destroyed = await leader.destroy(client, args.clusterset, args.namespace, args.timeout)
    if not destroyed and on_hub != "ended":
        raise NotFoundError(
            f"no ClusterSet {args.clusterset!r} and no member tokens in namespace {args.namespace}: nothing to destroy"
        )
    return EXIT_OK


async def deploy(args: argparse.Namespace) -> int:
    async with cluster(args) as client:
        await deploy_mod.deploy(client, args.target, args.manifest, args.namespace)
    return EXIT_OK


def _member_kubeconfigs(args: argparse.Namespace) -> list[Path]:
    found: list[Path] = list(args.member_kubeconfig)
    if not found and args.kubeconfig is not None:
        found = [args.kubeconfig]
    for path in found:
        if not path.is_file():
            raise UsageError(f"--member-kubeconfig {path} does not exist")
    return found


async def verify(args: argparse.Namespace) -> int:
    hub = _hub(args, required=True)
    assert hub is not None
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    members = await open_members(_member_kubeconfigs(args), args.member_namespace)
    try:
        checks = await verify_mod.verify(hub, members, args.member_namespace, args.test_namespace, args.timeout)
    finally:
        await close_members(members)
    print_objects(verify_mod.as_dicts(checks), args.output, verify_mod.CHECK_HEADER, verify_mod.check_rows, sort=False)
    failed = [c for c in checks if c.result == verify_mod.FAIL]
    if failed:
        note(f"verify: {len(failed)} check(s) failed")
        return EXIT_FAILED
    return EXIT_OK


async def diagnose(args: argparse.Namespace) -> int:
    hub = _hub(args, required=False)
    kubeconfigs = _member_kubeconfigs(args)
    if hub is None and not kubeconfigs:
        raise UsageError("nothing to diagnose: give --hub-url (and a token) and/or --member-kubeconfig")
    directory = args.output_dir or Path(f"mcctl-diagnose-{time.strftime('%Y%m%d-%H%M%S')}")
    members = await open_members(kubeconfigs, args.member_namespace)
    try:
        summary = await diagnose_mod.diagnose(hub, members, args.member_namespace, directory)
    finally:
        await close_members(members)
    print_objects(summary, args.output, diagnose_mod.SUMMARY_HEADER, diagnose_mod.summary_rows, sort=False)
    if args.output == "table":
        note(f"report written to {directory}/")
    return EXIT_OK
