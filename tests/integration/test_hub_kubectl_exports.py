"""The user guide's "ClusterNetworkPolicy Replication" with kubectl, on the leader cluster of a
hub of either store, on a sandbox and on a real kube-apiserver:

- `kube`: the hub keeps its state in the leader Namespace (`--store kube`);
- `mirror`: a SQLite hub mirrors into it (`--mirror-kubeconfig`).

`kubectl apply` of the guide's AntreaClusterNetworkPolicy ResourceExport makes the
ResourceImport within a second, every member's watch gets it and the export's status says
Succeeded; `kubectl delete` withdraws it everywhere; an edit re-imports it, a refused edit
keeps the policy in force and says why in the status; a person's Service ResourceExport is
refused with a status and never imported. On real clusters (RBAC on), a member's
ServiceAccount bound to the read-only member Role cannot create one at all.

Members here are gRPC clients of the hub (tests/integration/hubclient.py); the whole
ClusterSet with policies applied in member clusters is tests/integration/test_hub_kubectl_exports_e2e.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from hub.app import HubApp
from hub.config import HubConfig, KubeStoreConfig, MirrorConfig, SqliteStoreConfig
from hub.engine import Engine
from hub.leader_cluster.kubectl_exports import KubectlExports
from hub.store.base import WriteBatch
from hub.store.sqlite import CommitFailed, SqliteStore
from kube.client import KubeClient, WatchEvent
from kube.errors import NotFound
from kube.informer import Informer
from kube.leader import LeaseTiming
from kube.resources import EVENTS
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import RESOURCE_EXPORTS, RESOURCE_IMPORTS
from tests.contract.leader_api import LeaderApi, leader_api
from tests.deploy.kubectl import Kubectl, needs_kubectl
from tests.integration.hub_fixtures import hub_config
from tests.integration.hubclient import Member, MemberFactory, read_until_synced

pytestmark = needs_kubectl

CLUSTERSET, LEADER = "test-clusterset", "test-cluster-north"
EXPORT = "strict-namespace-isolation-for-test-clusterset"
POLICY = "strict-namespace-isolation"
IMPORT = names.acnp_import_name(POLICY)
MEMBER_ACCESS = Path(__file__).resolve().parents[2] / "deploy" / "config" / "hub" / "member-access.yaml"


def guide_export(namespace: str, *, priority: int = 1, cluster_id: str = "") -> str:
    """The user guide's manifest, verbatim but for the Namespace (and what a test changes)."""
    spec = f"  clusterID: {cluster_id}\n" if cluster_id else ""
    return f"""apiVersion: multicluster.crd.antrea.io/v1alpha1
kind: ResourceExport
metadata:
  name: {EXPORT}
  namespace: {namespace} # Namespace that Multi-cluster Controller is deployed
spec:
{spec}  kind: AntreaClusterNetworkPolicy
  name: {POLICY} # In each importing cluster, an ACNP of name antrea-mc-{POLICY} will be created with the spec below
  clusterNetworkPolicy:
    priority: {priority}
    tier: securityops
    appliedTo:
      - namespaceSelector: {{}} # Selects all Namespaces in the member cluster
    ingress:
      - action: Pass
        from:
          - namespaces:
              match: Self # Skip drop rule for traffic from Pods in the same Namespace
          - podSelector:
              matchLabels:
                k8s-app: kube-dns # Skip drop rule for traffic from the core-dns components
      - action: Drop
        from:
          - namespaceSelector: {{}} # Drop from Pods from all other Namespaces
"""


def service_export_manifest(namespace: str) -> str:
    """A member's Service ResourceExport as Antrea's members write them, written by a person."""
    return f"""apiVersion: multicluster.crd.antrea.io/v1alpha1
kind: ResourceExport
metadata:
  name: test-cluster-east-default-nginx-service
  namespace: {namespace}
  labels:
    sourceKind: Service
    sourceName: nginx
    sourceNamespace: default
    sourceClusterID: test-cluster-east
spec:
  clusterID: test-cluster-east
  kind: Service
  name: nginx
  namespace: default
  service:
    serviceSpec:
      type: ClusterIP
      clusterIP: 10.96.0.10
      ports:
        - name: http
          port: 80
          protocol: TCP
"""


@dataclass
class Leader:
    api: LeaderApi
    namespace: str
    hub: HubApp
    kubectl: Kubectl

    @property
    def client(self) -> KubeClient:
        return self.api.client


@pytest.fixture(params=["kube", "mirror"])
async def leader(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Leader]:
    store = request.param
    async with leader_api(cluster_kind, request, tmp_path / "leader-cluster") as api:
        ns = await api.namespace("leader") if api.real else await api.fixed_namespace(names.DEFAULT_LEADER_NAMESPACE)
        common: dict[str, Any] = {"cluster_set_id": CLUSTERSET, "leader_cluster_id": LEADER, "namespace": ns}
        if store == "kube":
            extra: dict[str, Any] = {
                "store": KubeStoreConfig(
                    kubeconfig=api.kubeconfig, lease=LeaseTiming(3.0, 2.0, 0.5), replica_id="hub-0"
                )
            }
        else:
            extra = {"store": SqliteStoreConfig(mirror=MirrorConfig(api.kubeconfig))}
        hub = HubApp(hub_config(tmp_path / "hub", **common, **extra))
        await hub.start()
        try:
            await until(_async(hub.is_leader), 15, "the hub serving")
            yield Leader(api, ns, hub, Kubectl(api.kubeconfig, cache_dir=tmp_path / "kubectl-cache"))
        finally:
            await hub.stop()


def _async(probe: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def run() -> bool:
        return probe()

    return run


async def until(probe: Callable[[], Awaitable[bool]], within: float, what: str) -> float:
    start = time.monotonic()
    while time.monotonic() - start < within:
        if await probe():
            return time.monotonic() - start
        await asyncio.sleep(0.02)
    raise AssertionError(f"{what}: not within {within}s")


async def get_or_none(client: KubeClient, resource: Any, name: str, namespace: str) -> dict[str, Any] | None:
    try:
        return await client.get(resource, name, namespace)
    except NotFound:
        return None


def condition(obj: dict[str, Any] | None) -> tuple[str, str, str] | None:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    if not conditions:
        return None
    first = conditions[0]
    return first.get("type"), first.get("status"), first.get("reason", "")


async def member_watches(leader: Leader, *clusters: str) -> tuple[MemberFactory, dict[str, Any]]:
    members = MemberFactory(leader.hub)
    streams = {}
    for cluster in clusters:
        member: Member = await members(cluster)
        stream = member.watch()
        await read_until_synced(stream)
        streams[cluster] = stream
    return members, streams


async def next_change(stream: Any, import_name: str, within: float = 5.0) -> pb.WatchImportsResponse:
    """The next upsert or delete of `import_name` on a member's watch."""
    async with asyncio.timeout(within):
        while True:
            event = await stream.__anext__()
            kind = event.WhichOneof("event")
            if kind == "upsert" and event.upsert.import_name == import_name:
                return event
            if kind == "delete" and event.delete.import_name == import_name:
                return event


async def test_kubectl_apply_of_the_guides_policy_imports_it_everywhere_within_a_second_and_delete_withdraws_it(
    leader: Leader,
) -> None:
    ns, client = leader.namespace, leader.client
    members, streams = await member_watches(leader, "test-cluster-east", "test-cluster-west")
    try:
        (await leader.kubectl("apply", "-f", "-", stdin=guide_export(ns))).check()
        # From kubectl's return (its own start-up is not the hub's time) to the import in the leader.
        took = await until(lambda: _present(client, RESOURCE_IMPORTS, IMPORT, ns), 5, "the ResourceImport")
        assert took < 1.0, f"the ResourceImport took {took:.2f}s after kubectl apply"
        imported = await client.get(RESOURCE_IMPORTS, IMPORT, ns)
        assert imported["spec"]["kind"] == "AntreaClusterNetworkPolicy"
        assert imported["spec"]["clusternetworkpolicy"]["tier"] == "securityops"
        for cluster, stream in streams.items():
            event = await next_change(stream, IMPORT)
            assert event.WhichOneof("event") == "upsert", cluster
            assert event.upsert.cluster_network_policy["tier"] == "securityops"

        async def succeeded() -> bool:
            return condition(await get_or_none(client, RESOURCE_EXPORTS, EXPORT, ns)) == ("Succeeded", "True", "")

        await until(succeeded, 5, "the export's status Succeeded")
        export = await client.get(RESOURCE_EXPORTS, EXPORT, ns)
        assert export["status"]["conditions"][0]["message"] == f"Imported as {IMPORT} by every member."
        header, row = (await leader.kubectl("get", "resourceexport", EXPORT, "-n", ns)).check().stdout.splitlines()
        assert header.split() == ["NAME", "CLUSTER", "ID", "KIND", "NAMESPACE", "NAME", "AGE"]
        assert row.split()[:4] == [EXPORT, LEADER, "AntreaClusterNetworkPolicy", POLICY]  # (no Namespace)

        (await leader.kubectl("delete", "resourceexport", EXPORT, "-n", ns)).check()
        took = await until(lambda: _absent(client, RESOURCE_IMPORTS, IMPORT, ns), 5, "the ResourceImport gone")
        assert took < 1.0, f"the ResourceImport stayed {took:.2f}s after kubectl delete"
        for cluster, stream in streams.items():
            event = await next_change(stream, IMPORT)
            assert event.WhichOneof("event") == "delete", cluster
        assert EXPORT not in leader.hub.engine.index.exports
    finally:
        await members.close()


async def _present(client: KubeClient, resource: Any, name: str, namespace: str) -> bool:
    return await get_or_none(client, resource, name, namespace) is not None


async def _absent(client: KubeClient, resource: Any, name: str, namespace: str) -> bool:
    return await get_or_none(client, resource, name, namespace) is None


async def test_an_edit_is_imported_again_and_a_refused_edit_keeps_the_policy_and_says_why(leader: Leader) -> None:
    ns, client = leader.namespace, leader.client
    (await leader.kubectl("apply", "-f", "-", stdin=guide_export(ns))).check()
    await until(lambda: _present(client, RESOURCE_IMPORTS, IMPORT, ns), 5, "the ResourceImport")

    (await leader.kubectl("apply", "-f", "-", stdin=guide_export(ns, priority=2))).check()

    async def priority_two() -> bool:
        imported = await get_or_none(client, RESOURCE_IMPORTS, IMPORT, ns)
        return bool(imported and imported["spec"]["clusternetworkpolicy"]["priority"] == 2)

    await until(priority_two, 5, "the edited policy imported")

    # A policy is the ClusterSet admin's, for every member: a clusterID naming a member is refused.
    (await leader.kubectl("apply", "-f", "-", stdin=guide_export(ns, priority=3, cluster_id="east"))).check()

    async def refused() -> bool:
        return condition(await get_or_none(client, RESOURCE_EXPORTS, EXPORT, ns)) == (
            "Failure",
            "True",
            "InvalidExport",
        )

    await until(refused, 5, "the refused edit's status")
    export = await client.get(RESOURCE_EXPORTS, EXPORT, ns)
    assert "clusterID must be the leader's" in export["status"]["conditions"][0]["message"]
    assert await priority_two(), "the policy in force stays"
    assert leader.hub.engine.index.exports[EXPORT].cluster_network_policy["priority"] == 2
    events = (await client.list(EVENTS, ns)).items
    assert any(e.get("reason") == "InvalidExport" and e["involvedObject"]["name"] == EXPORT for e in events)
    (await leader.kubectl("delete", "resourceexport", EXPORT, "-n", ns)).check()
    await until(lambda: _absent(client, RESOURCE_IMPORTS, IMPORT, ns), 5, "the ResourceImport gone")


async def test_a_persons_service_resource_export_is_refused_with_a_status_and_never_imported(leader: Leader) -> None:
    ns, client = leader.namespace, leader.client
    name = "test-cluster-east-default-nginx-service"
    (await leader.kubectl("apply", "-f", "-", stdin=service_export_manifest(ns))).check()

    async def refused() -> bool:
        return condition(await get_or_none(client, RESOURCE_EXPORTS, name, ns)) == (
            "Failure",
            "True",
            "ExportThroughHub",
        )

    await until(refused, 5, "the refusal in the status")
    export = await client.get(RESOURCE_EXPORTS, name, ns)
    assert "through it (gRPC)" in export["status"]["conditions"][0]["message"]
    await asyncio.sleep(0.5)  # a moment for anything that would wrongly import it
    assert name not in leader.hub.engine.index.exports
    assert await _absent(client, RESOURCE_IMPORTS, names.service_import_name("default", "nginx"), ns)
    assert export["spec"]["service"]["serviceSpec"]["clusterIP"] == "10.96.0.10", "left as the person wrote it"


async def test_the_leaders_rbac_decides_who_may_export_a_policy(leader: Leader, tmp_path: Path) -> None:
    """As in Antrea: the member Role is read-only, so a member's ServiceAccount cannot create one."""
    if not leader.api.real:
        pytest.skip("the sandbox has no RBAC (sandbox README: every authenticated caller may do everything)")
    ns = leader.namespace
    for document in yaml.safe_load_all(MEMBER_ACCESS.read_text()):
        if document["kind"] in ("Role", "RoleBinding"):
            document["metadata"]["namespace"] = ns
            for subject in document.get("subjects") or []:
                subject["namespace"] = ns
            (await leader.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(document))).check()
    token = await leader.api.service_account_token(ns, "antrea-mc-member-access-sa", "*")
    config = yaml.safe_load(leader.api.kubeconfig.read_text())
    config["users"] = [{"name": "member", "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = "member"
    member_kubeconfig = tmp_path / "member.kubeconfig"
    member_kubeconfig.write_text(yaml.safe_dump(config))
    as_member = Kubectl(member_kubeconfig, cache_dir=tmp_path / "member-cache")
    denied = await as_member("apply", "-f", "-", stdin=guide_export(ns))
    assert denied.code != 0 and "forbidden" in denied.stderr.lower(), denied
    (await as_member("get", "resourceexport", "-n", ns)).check()  # it may look
    assert EXPORT not in leader.hub.engine.index.exports
    with contextlib.suppress(NotFound):
        await leader.client.get(RESOURCE_EXPORTS, EXPORT, ns)
        raise AssertionError("a member created a ResourceExport in the leader Namespace")


# ---- the controller's work queue ------------------------------------------------------------
# KubectlExports alone, on the leader's API (sandbox or real) and a hub engine over a SQLite store
# that can be made to fail or to hold a write: how it drains what the watch tells it.


class ControlledStore(SqliteStore):
    """A SQLite store whose writes of chosen exports fail (``failing``) or, once written, wait
    for durability (``gated``: until ``release``), and which notes when each export's write was
    tried."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir)
        self.failing: set[str] = set()
        self.gated = False
        self.taken = asyncio.Event()
        self.release = asyncio.Event()
        self.tries: dict[str, list[float]] = {}
        # The revision of the first export written while gated: waits for it are held.
        self._held: int | None = None

    def stage(self, batch: WriteBatch) -> int:
        exports = [e.export_name for e in batch.put_exports] + list(batch.delete_exports)
        for name in exports:
            self.tries.setdefault(name, []).append(time.monotonic())
        if self.failing.intersection(exports):
            raise CommitFailed("the store could not write: database or disk is full")
        revision = super().stage(batch)
        if self.gated and exports and self._held is None:
            self._held = revision
        return revision

    async def synced(self, revision: int) -> None:
        if self.gated and self._held is not None and revision >= self._held:
            self.taken.set()
            await self.release.wait()
        await super().synced(revision)


@dataclass
class Controller:
    client: KubeClient
    namespace: str
    engine: Engine
    store: ControlledStore
    intake: KubectlExports
    seen: list[WatchEvent]  # what the watch handed the controller, in order


@pytest.fixture
async def controller(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Controller]:
    async with leader_api(cluster_kind, request, tmp_path / "leader-cluster") as api:
        ns = await api.namespace("leader") if api.real else await api.fixed_namespace(names.DEFAULT_LEADER_NAMESPACE)
        store = ControlledStore(tmp_path / "hub")
        config = HubConfig(data_dir=tmp_path / "hub", cluster_set_id=CLUSTERSET, leader_cluster_id=LEADER)
        engine = Engine(store, config)
        await engine.start()
        intake = KubectlExports(api.client, ns, lambda: engine, mirrored=True)
        seen: list[WatchEvent] = []

        async def handler(event: WatchEvent) -> None:
            seen.append(event)
            await intake.on_event(event)

        informer = Informer(api.client, RESOURCE_EXPORTS, namespace=ns, handler=handler)
        try:
            await informer.wait_synced()
            yield Controller(api.client, ns, engine, store, intake, seen)
        finally:
            await informer.stop()
            await intake.close()
            await store.close()


def policy_cr(name: str, priority: int) -> dict[str, Any]:
    """A policy ResourceExport as a person applies it (the guide's, trimmed), named ``name``."""
    return {
        "apiVersion": "multicluster.crd.antrea.io/v1alpha1",
        "kind": "ResourceExport",
        "metadata": {"name": name},
        "spec": {
            "kind": "AntreaClusterNetworkPolicy",
            "name": f"{name}-policy",
            "clusterNetworkPolicy": {
                "priority": priority,
                "tier": "securityops",
                "appliedTo": [{"namespaceSelector": {}}],
                "ingress": [{"action": "Drop", "from": [{"namespaceSelector": {}}]}],
            },
        },
    }


def priority_held(c: Controller, name: str) -> int | None:
    exports = c.engine.index.exports
    if name not in exports:
        return None
    priority = exports[name].cluster_network_policy["priority"]
    assert isinstance(priority, float)
    return int(priority)


async def test_a_policy_the_store_cannot_write_is_retried_with_backoff_while_another_converges(
    controller: Controller,
) -> None:
    c = controller
    c.store.failing.add("doomed")
    await c.client.create(RESOURCE_EXPORTS, policy_cr("doomed", 1), c.namespace)
    await until(_async(lambda: len(c.store.tries.get("doomed", [])) >= 2), 5, "the doomed policy tried twice")
    await c.client.create(RESOURCE_EXPORTS, policy_cr("healthy", 1), c.namespace)
    took = await until(_async(lambda: priority_held(c, "healthy") == 1), 5, "the healthy policy taken in")
    assert took < 2.0, f"a failing key held the other up for {took:.2f}s"
    await c.client.patch(RESOURCE_EXPORTS, "healthy", {"spec": {"clusterNetworkPolicy": {"priority": 2}}}, c.namespace)
    await until(_async(lambda: priority_held(c, "healthy") == 2), 2, "the healthy policy's edit taken in")

    await until(_async(lambda: len(c.store.tries["doomed"]) >= 4), 10, "the doomed policy tried four times")
    tries = c.store.tries["doomed"]
    gaps = [later - earlier for earlier, later in itertools.pairwise(tries[:4])]
    # 0.5 s, doubling (a busy machine only lengthens the gaps)
    assert all(gap >= 0.45 * 2**i for i, gap in enumerate(gaps)), f"retried without a doubling backoff: {gaps}"
    assert "doomed" in c.intake.claimed, "a policy waiting to be taken in stays claimed (the mirror keeps off)"
    assert "doomed" not in c.engine.index.exports

    c.store.failing.clear()
    await until(_async(lambda: priority_held(c, "doomed") == 1), 12, "the doomed policy taken in once the store works")
    await c.intake.settled()
    assert c.intake.claimed == set()


async def test_a_policy_edited_many_times_quickly_is_taken_in_far_fewer_times_and_ends_at_the_last_edit(
    controller: Controller,
) -> None:
    c = controller
    c.store.gated = True
    await c.client.create(RESOURCE_EXPORTS, policy_cr("busy", 1), c.namespace)
    await c.store.taken.wait()
    edits = 30
    for priority in range(2, edits + 2):
        patch = {"spec": {"clusterNetworkPolicy": {"priority": priority}}}
        await c.client.patch(RESOURCE_EXPORTS, "busy", patch, c.namespace)

    def last_edit_seen() -> bool:
        return any(
            e.type == "MODIFIED" and e.object["spec"]["clusterNetworkPolicy"]["priority"] == edits + 1 for e in c.seen
        )

    await until(_async(last_edit_seen), 10, "the watch handing over the last edit")
    c.store.gated = False
    c.store.release.set()
    await until(_async(lambda: priority_held(c, "busy") == edits + 1), 5, "the last edit taken in")
    await c.intake.settled()
    assert len(c.store.tries["busy"]) <= 3, f"{edits} quick edits written {len(c.store.tries['busy'])} times"
    assert priority_held(c, "busy") == edits + 1


async def test_a_policy_deleted_while_it_is_being_taken_in_is_withdrawn(controller: Controller) -> None:
    c = controller
    c.store.gated = True
    await c.client.create(RESOURCE_EXPORTS, policy_cr("fleeting", 1), c.namespace)
    await c.store.taken.wait()
    await c.client.delete(RESOURCE_EXPORTS, "fleeting", c.namespace)
    await until(_async(lambda: any(e.type == "DELETED" for e in c.seen)), 10, "the watch handing over the deletion")
    c.store.gated = False
    c.store.release.set()
    await until(_async(lambda: len(c.store.tries["fleeting"]) >= 2), 5, "the policy taken in, then withdrawn")
    await c.intake.settled()
    assert "fleeting" not in c.engine.index.exports
    assert c.intake.claimed == set()


async def test_close_stops_it_at_once_and_nothing_is_decided_or_written_afterwards(controller: Controller) -> None:
    c = controller
    c.store.failing.add("doomed")
    await c.client.create(RESOURCE_EXPORTS, policy_cr("doomed", 1), c.namespace)
    await until(_async(lambda: len(c.store.tries.get("doomed", [])) >= 1), 5, "the doomed policy tried")
    async with asyncio.timeout(1.0):
        await c.intake.close()
    assert c.intake.claimed == set()
    c.store.failing.clear()
    tried = len(c.store.tries["doomed"])

    # The watch goes on handing over events (its owner stops it later): none is acted on.
    await c.client.create(RESOURCE_EXPORTS, policy_cr("late", 1), c.namespace)
    await c.client.create(RESOURCE_EXPORTS, yaml.safe_load(service_export_manifest(c.namespace)), c.namespace)
    await until(_async(lambda: sum(e.type == "ADDED" for e in c.seen) >= 3), 10, "the watch handing over new CRs")
    await asyncio.sleep(1.5)  # past the doomed policy's next retry, and time for any decision
    assert len(c.store.tries["doomed"]) == tried, "a retry ran after close"
    assert "late" not in c.store.tries and "late" not in c.engine.index.exports
    assert c.intake.claimed == set()
    service = await c.client.get(RESOURCE_EXPORTS, "test-cluster-east-default-nginx-service", c.namespace)
    assert not service.get("status"), "a status was written after close"
    async with asyncio.timeout(1.0):
        await c.intake.settled()
