"""The rendered manifests read as data: security settings, probes, resources, references
that must resolve, RBAC that covers what the hub does, configuration the programs accept."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agent.config import parse_agent_config
from hub.config import HubConfig, KubeStoreConfig
from kube.leader import LeaseTiming
from mcapi.config import MultiClusterConfig, parse_configmap_data
from mcapi.names import MC_CONTROLLER_CONFIG_KEY, MC_CONTROLLER_CONFIGMAP
from mchub_cli.hub_cmd import _config as hub_config_from_args
from mchub_cli.main import build_parser
from tests.deploy import manifests, schema
from tests.deploy.manifests import Obj
from tests.deploy.podspec import PodIdentity, command_line, container_env

NON_ROOT_UID = 65532
ALL_OBJECTS = [(path, obj) for path in manifests.ALL for obj in manifests.load(path)]
WORKLOADS = [(path, obj) for path, obj in ALL_OBJECTS if obj["kind"] in ("Deployment", "DaemonSet")]


def _id(item: tuple[Path, Obj]) -> str:
    path, obj = item
    return f"{path.name}:{obj['kind']}/{obj['metadata']['name']}"


def _containers(workload: Obj) -> list[Obj]:
    pod = workload["spec"]["template"]["spec"]
    return [*pod.get("initContainers", []), *pod["containers"]]


def _argv(path: Path, workload: Obj) -> list[str]:
    objects = manifests.load(path)
    container = workload["spec"]["template"]["spec"]["containers"][0]
    env = container_env(objects, container, PodIdentity("pod-0", workload["metadata"]["namespace"]))
    return command_line(container, env)


@pytest.mark.parametrize("item", ALL_OBJECTS, ids=_id)
def test_every_object_has_only_fields_the_kubernetes_api_knows(item: tuple[Path, Obj]) -> None:
    assert schema.problems(item[1]) == []


@pytest.mark.parametrize("path", manifests.ALL, ids=lambda p: p.name)
def test_no_object_appears_twice_in_a_manifest(path: Path) -> None:
    keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in manifests.load(path)]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("item", [w for w in WORKLOADS if w[1]["kind"] == "Deployment"], ids=_id)
def test_controllers_run_as_the_images_non_root_user_with_nothing_to_escalate_to(item: tuple[Path, Obj]) -> None:
    _, workload = item
    pod = workload["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == NON_ROOT_UID
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork")
    for container in _containers(workload):
        context = container["securityContext"]
        assert context["runAsNonRoot"] is True
        assert context["runAsUser"] == NON_ROOT_UID
        assert context["readOnlyRootFilesystem"] is True
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert not context.get("privileged")


def test_the_agent_runs_privileged_as_root_on_the_host_network() -> None:
    """Privileged, as CNI agents are: container runtimes mount /proc/sys read-only in every other
    container, and the agent writes its tunnel devices' sysctls (found on real nodes: with
    NET_ADMIN alone every reconcile failed with EROFS and no route was installed)."""
    agent = manifests.find(manifests.load(manifests.AGENT), "DaemonSet", "mchub-agent")
    pod = agent["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True
    assert pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    (container,) = pod["containers"]
    context = container["securityContext"]
    assert context["privileged"] is True
    assert context["runAsUser"] == 0
    assert context["readOnlyRootFilesystem"] is True
    # The API server refuses privileged together with allowPrivilegeEscalation: false.
    assert "allowPrivilegeEscalation" not in context
    # Its probes reach the probe server where it listens: the Node's loopback.
    argv = _argv(manifests.AGENT, agent)
    host, _, port = argv[argv.index("--probe-address") + 1].rpartition(":")
    assert host == "127.0.0.1"
    assert {p["name"]: p["containerPort"] for p in container["ports"]}["probe"] == int(port)
    assert container["readinessProbe"]["httpGet"] == {"host": host, "path": "/readyz", "port": "probe"}
    assert container["livenessProbe"]["httpGet"] == {"host": host, "path": "/healthz", "port": "probe"}
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"] if "valueFrom" in e}
    assert env["NODE_NAME"] == "spec.nodeName"
    assert container["args"][:3] == ["agent", "--node", "$(NODE_NAME)"]
    # The WireGuard key outlives the Pod: remote Gateways keep the peer they know.
    key_dir = str(Path(_argv(manifests.AGENT, agent)[container["args"].index("--key-path") + 2]).parent)
    mount = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}[key_dir]
    assert "hostPath" in {v["name"]: v for v in pod["volumes"]}[mount]


@pytest.mark.parametrize("item", WORKLOADS, ids=_id)
def test_every_container_requests_and_limits_cpu_and_memory(item: tuple[Path, Obj]) -> None:
    for container in _containers(item[1]):
        resources = container["resources"]
        assert set(resources["requests"]) == {"cpu", "memory"}
        assert set(resources["limits"]) == {"cpu", "memory"}


@pytest.mark.parametrize("item", WORKLOADS, ids=_id)
def test_every_writable_path_is_a_volume_because_the_root_filesystem_is_read_only(item: tuple[Path, Obj]) -> None:
    pod = item[1]["spec"]["template"]["spec"]
    volumes = {v["name"] for v in pod["volumes"]}
    for container in _containers(item[1]):
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        assert "/tmp" in mounts
        assert set(mounts.values()) <= volumes


@pytest.mark.parametrize("item", WORKLOADS, ids=_id)
def test_every_probe_asks_a_declared_container_port(item: tuple[Path, Obj]) -> None:
    for container in _containers(item[1]):
        ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            if probe in container:
                assert container[probe]["httpGet"]["port"] in ports


def test_the_hubs_probes_use_its_rest_port_and_replicas_elect_a_leader() -> None:
    objects = manifests.load(manifests.LEADER)
    hub = manifests.find(objects, "Deployment", "mchub-hub")
    assert hub["spec"]["replicas"] == 2
    # The old leader lets go of the Lease as it stops; the new replicas take it.
    assert hub["spec"]["strategy"] == {"type": "Recreate"}
    (container,) = hub["spec"]["template"]["spec"]["containers"]
    # Ready in its role (the leader, or a follower serving watches); the write Service selects
    # the leader by its Pod label. The REST port serves HTTPS (it carries bearer tokens), so
    # the kubelet probes it over TLS.
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz/watches", "port": "rest", "scheme": "HTTPS"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "rest", "scheme": "HTTPS"}
    assert "--insecure" not in _argv(manifests.LEADER, hub)
    argv = _argv(manifests.LEADER, hub)
    rest_port = int(argv[argv.index("--rest-address") + 1].rpartition(":")[2])
    assert {p["name"]: p["containerPort"] for p in container["ports"]}["rest"] == rest_port
    assert argv[argv.index("--store") + 1] == "kube"
    assert argv[argv.index("--replica-id") + 1] == "pod-0"
    assert "mchub-hub.antrea-multicluster.svc" in argv


def test_the_hub_service_selects_the_hub_pods_and_exposes_grpc_and_rest() -> None:
    objects = manifests.load(manifests.LEADER)
    service = manifests.find(objects, "Service", "mchub-hub")
    template = manifests.find(objects, "Deployment", "mchub-hub")["spec"]["template"]
    selector = dict(service["spec"]["selector"])
    # The leader labels its own Pod with its role (--pod-name): writes reach the leader alone,
    # watches any Ready replica.
    assert selector.pop("mchub.antrea.io/hub-role") == "leader"
    assert selector.items() <= template["metadata"]["labels"].items()
    watch = manifests.find(objects, "Service", "mchub-hub-watch")
    assert watch["spec"]["selector"].items() <= template["metadata"]["labels"].items()
    assert watch["spec"]["ports"] == service["spec"]["ports"]
    container_ports = {p["name"]: p["containerPort"] for p in template["spec"]["containers"][0]["ports"]}
    exposed = {p["port"]: container_ports[p["targetPort"]] for p in service["spec"]["ports"]}
    assert exposed == {50051: 50051, 8080: 8080}
    assert {p["name"]: p["appProtocol"] for p in service["spec"]["ports"]} == {"grpc": "grpc", "rest": "https"}


@pytest.mark.parametrize("path", manifests.ALL, ids=lambda p: p.name)
def test_every_reference_between_objects_resolves_within_the_manifest(path: Path) -> None:
    objects = manifests.load(path)
    present = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects}
    for obj in objects:
        namespace = obj["metadata"].get("namespace")
        if obj["kind"] in ("Deployment", "DaemonSet"):
            pod = obj["spec"]["template"]["spec"]
            assert ("ServiceAccount", namespace, pod["serviceAccountName"]) in present
            for volume in pod["volumes"]:
                if "configMap" in volume:
                    assert ("ConfigMap", namespace, volume["configMap"]["name"]) in present
        if obj["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            ref = obj["roleRef"]
            scope = namespace if ref["kind"] == "Role" else None
            assert (ref["kind"], scope, ref["name"]) in present, ref
            for subject in obj["subjects"]:
                assert ("ServiceAccount", subject["namespace"], subject["name"]) in present, subject
        if obj["kind"] == "Secret" and obj.get("type") == "kubernetes.io/service-account-token":
            account = obj["metadata"]["annotations"]["kubernetes.io/service-account.name"]
            assert ("ServiceAccount", namespace, account) in present


def test_the_default_member_access_is_what_the_user_guide_describes() -> None:
    objects = manifests.load(manifests.LEADER)
    account = manifests.find(objects, "ServiceAccount", "antrea-mc-member-access-sa")
    assert account["metadata"]["annotations"] == {"multicluster.antrea.io/cluster-id": "*"}
    secret = manifests.find(objects, "Secret", "antrea-mc-member-access-token")
    assert secret["type"] == "kubernetes.io/service-account-token"
    role = manifests.find(objects, "Role", "antrea-mc-member-cluster-role")
    # Members talk to the hub, never to the leader's API: their Role cannot write.
    assert {verb for rule in role["rules"] for verb in rule["verbs"]} <= {"get", "list", "watch"}


# ---- RBAC --------------------------------------------------------------------------------


def _allows(rules: list[Obj], group: str, resource: str, verb: str, name: str | None = None) -> bool:
    for rule in rules:
        if group in rule.get("apiGroups", []) and resource in rule["resources"] and verb in rule["verbs"]:
            names = rule.get("resourceNames")
            if not names or name in names:
                return True
    return False


def _bound_rules(objects: list[Obj], account: str) -> tuple[list[Obj], list[Obj]]:
    """(namespaced rules, cluster-wide rules) granted to a ServiceAccount by the manifest."""
    namespaced: list[Obj] = []
    cluster: list[Obj] = []
    for binding in objects:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(s["name"] == account for s in binding["subjects"]):
            continue
        role = manifests.find(objects, binding["roleRef"]["kind"], binding["roleRef"]["name"])
        (namespaced if binding["kind"] == "RoleBinding" else cluster).extend(role["rules"])
    return namespaced, cluster


# What the hub's code does with the API (hub/store/kube.py, hub/leader_cluster/status_writer.py,
# kube/leader.py, hub/auth/tokenreview.py), in its own Namespace unless cluster-scoped.
HUB_NAMESPACED_CALLS = [
    *[
        ("multicluster.crd.antrea.io", resource, verb)
        for resource in ("resourceexports", "resourceimports", "memberclusterannounces")
        for verb in ("get", "list", "create", "patch", "delete")
    ],
    ("multicluster.crd.antrea.io", "resourceexports/status", "patch"),
    ("multicluster.crd.antrea.io", "resourceimports/status", "patch"),
    ("multicluster.crd.antrea.io", "clustersets", "get"),
    ("multicluster.crd.antrea.io", "clustersets/status", "patch"),
    ("coordination.k8s.io", "leases", "get"),
    ("coordination.k8s.io", "leases", "create"),
    ("coordination.k8s.io", "leases", "update"),
    ("", "serviceaccounts", "get"),
    ("", "events", "create"),
]


@pytest.mark.parametrize("path", [manifests.LEADER, manifests.LEADER_NAMESPACED], ids=lambda p: p.name)
def test_the_hubs_rbac_covers_every_call_it_makes_and_nothing_cluster_wide_beyond_tokenreviews(path: Path) -> None:
    objects = manifests.load(path)
    namespaced, cluster = _bound_rules(objects, "mchub-hub")
    for group, resource, verb in HUB_NAMESPACED_CALLS:
        assert _allows(namespaced, group, resource, verb), (group, resource, verb)
    assert _allows(cluster, "authentication.k8s.io", "tokenreviews", "create")
    assert _allows(cluster, "", "namespaces", "get", "antrea-multicluster")
    assert not _allows(cluster, "", "namespaces", "get", "kube-system")
    assert not _allows(namespaced, "", "secrets", "get")
    assert all("*" not in rule["verbs"] and "*" not in rule["resources"] for rule in namespaced + cluster)


def test_the_members_rbac_reads_and_writes_what_the_member_controller_handles() -> None:
    objects = manifests.load(manifests.MEMBER)
    namespaced, cluster = _bound_rules(objects, "mchub-member")
    mc, mcs = "multicluster.crd.antrea.io", "multicluster.x-k8s.io"
    for group, resource, verb in [
        (mcs, "serviceexports", "watch"),
        (mcs, "serviceexports/status", "patch"),
        (mcs, "serviceimports", "create"),
        ("", "services", "create"),
        ("", "endpoints", "delete"),
        ("discovery.k8s.io", "endpointslices", "create"),
        ("", "namespaces", "watch"),
        ("", "nodes", "watch"),
        # Label identities (enableStretchedNetworkPolicy): every Pod's and Namespace's labels.
        ("", "pods", "watch"),
        ("", "events", "create"),
        (mc, "labelidentities", "create"),
        ("crd.antrea.io", "clusternetworkpolicies", "create"),
        ("crd.antrea.io", "tiers", "get"),
        ("apiextensions.k8s.io", "customresourcedefinitions", "list"),
        ("networking.k8s.io", "servicecidrs", "list"),
    ]:
        assert _allows(cluster, group, resource, verb), (group, resource, verb)
    for group, resource, verb in [
        (mc, "clustersets", "watch"),
        (mc, "clustersets/status", "patch"),
        (mc, "clusterclaims", "list"),
        (mc, "gateways", "create"),
        (mc, "clusterinfoimports", "create"),
        (mc, "clusterinfoimports/status", "patch"),
        ("", "secrets", "get"),
        ("", "configmaps", "get"),
    ]:
        assert _allows(namespaced, group, resource, verb), (group, resource, verb)
    # Read only where reading is all it needs; Secrets only in its own Namespace.
    assert not _allows(cluster, "", "nodes", "patch")
    assert not _allows(cluster, "", "pods", "create")
    assert not _allows(cluster, "", "namespaces", "create")
    assert not _allows(cluster, "", "secrets", "get")
    assert not _allows(namespaced, "", "secrets", "create")


def test_the_agents_rbac_covers_what_it_watches_and_writes_and_no_more() -> None:
    objects = manifests.load(manifests.AGENT)
    namespaced, cluster = _bound_rules(objects, "mchub-agent")
    mc = "multicluster.crd.antrea.io"
    assert _allows(cluster, "", "nodes", "watch")
    # Its WireGuard public key, as an annotation on its own Node.
    assert _allows(cluster, "", "nodes", "patch")
    for resource in ("gateways", "clusterinfoimports", "clustersets"):
        assert _allows(namespaced, mc, resource, "watch")
        assert not _allows(namespaced, mc, resource, "update")
    assert _allows(namespaced, mc, "clusterinfoimports/status", "patch")
    assert _allows(namespaced, "", "configmaps", "watch", "antrea-mc-controller-config")
    assert not _allows(namespaced, "", "configmaps", "watch", "antrea-config")
    assert not _allows(namespaced, "", "secrets", "get")


# ---- what the programs accept ------------------------------------------------------------


def _parse(argv: list[str]) -> argparse.Namespace:
    assert argv[0] == "mchub"
    return build_parser().parse_args(argv[1:])


@pytest.mark.parametrize("path", [manifests.LEADER, manifests.LEADER_NAMESPACED], ids=lambda p: p.name)
def test_the_hubs_arguments_make_a_valid_hub_configuration(path: Path) -> None:
    hub = manifests.find(manifests.load(path), "Deployment", "mchub-hub")
    args = _parse(_argv(path, hub))
    config: HubConfig = hub_config_from_args(args).validate()
    assert isinstance(config.store, KubeStoreConfig)
    assert config.namespace == hub["metadata"]["namespace"]
    assert config.cluster_set_id == "test-clusterset"
    assert config.leader_cluster_id == "test-cluster-north"
    assert not config.insecure
    assert config.store.lease == LeaseTiming(15.0, 10.0, 2.0)


@pytest.mark.parametrize(
    ("path", "kind", "name"),
    [(manifests.MEMBER, "Deployment", "mchub-member"), (manifests.AGENT, "DaemonSet", "mchub-agent")],
    ids=["member", "agent"],
)
def test_the_member_and_agent_arguments_are_accepted_by_their_subcommands(path: Path, kind: str, name: str) -> None:
    workload = manifests.find(manifests.load(path), kind, name)
    argv = _argv(path, workload)
    commands = _subcommands()
    if argv[1] not in commands:
        pytest.skip(f"`mchub {argv[1]}` is not registered in mchub_cli yet; its arguments cannot be checked")
    _parse(argv)


def _subcommands() -> set[str]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def test_the_member_configmap_holds_a_valid_multicluster_config_with_every_field_commented() -> None:
    configmap = manifests.find(manifests.load(manifests.MEMBER), "ConfigMap", MC_CONTROLLER_CONFIGMAP)
    config = parse_configmap_data(configmap["data"])
    assert config.warnings == ()
    assert config.gateway_ip_precedence == "internal"
    assert config.endpoint_ip_type == "ClusterIP"
    assert config.gateway_mode == "single-active"
    lines = configmap["data"][MC_CONTROLLER_CONFIG_KEY].splitlines()
    documented = {"metrics", "health", "serviceCIDR", "podCIDRs", "gatewayIPPrecedence", "endpointIPType"}
    documented |= {"enableStretchedNetworkPolicy", "gatewayMode"}
    # The webhook block is Antrea's admission webhook; the hub makes those checks itself.
    assert documented == {_alias(name) for name in MultiClusterConfig.model_fields} - {
        "apiVersion",
        "kind",
        "webhook",
        "warnings",
    }
    for key in documented:
        (index,) = [i for i, line in enumerate(lines) if line.startswith(f"{key}:")]
        assert lines[index - 1].startswith("#"), f"{key} has no comment above it"


def _alias(field_name: str) -> str:
    alias = MultiClusterConfig.model_fields[field_name].alias
    return alias or field_name


def test_the_agent_configmap_is_an_antrea_style_multicluster_section_the_agent_accepts() -> None:
    objects = manifests.load(manifests.AGENT)
    configmap = manifests.find(objects, "ConfigMap", "mchub-agent-config")
    (text,) = configmap["data"].values()
    config = parse_agent_config(text)
    assert config.enable_gateway is True
    assert config.wireguard.port == 51821
    daemonset = manifests.find(objects, "DaemonSet", "mchub-agent")
    (container,) = daemonset["spec"]["template"]["spec"]["containers"]
    argv = _argv(manifests.AGENT, daemonset)
    config_path = Path(argv[argv.index("--config") + 1])
    mount = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}[str(config_path.parent)]
    volume = {v["name"]: v for v in daemonset["spec"]["template"]["spec"]["volumes"]}[mount]
    assert volume["configMap"]["name"] == "mchub-agent-config"
    assert config_path.name in configmap["data"]


def test_the_tls_leader_manifest_serves_the_secrets_certificate_and_nothing_else_differs() -> None:
    """Applying it again (an upgrade) keeps the TLS arguments, which `kubectl apply` of the plain
    manifest over a hand-patched Deployment drops."""
    plain, tls = manifests.load(manifests.LEADER), manifests.load(manifests.LEADER_TLS)
    hub = manifests.find(tls, "Deployment", "mchub-hub")
    (container,) = hub["spec"]["template"]["spec"]["containers"]
    assert "--tls-cert=/etc/mchub/tls/tls.crt" in container["args"]
    assert "--tls-key=/etc/mchub/tls/tls.key" in container["args"]
    volumes = {v["name"]: v for v in hub["spec"]["template"]["spec"]["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == "mchub-hub-tls"
    assert not volumes["tls"]["secret"].get("optional")
    key = lambda o: (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])  # noqa: E731
    assert sorted(map(key, plain)) == sorted(map(key, tls))
    assert [o for o in plain if o["kind"] != "Deployment"] == [o for o in tls if o["kind"] != "Deployment"]


def test_the_hub_nodeport_publishes_grpc_alone_to_the_leading_replica() -> None:
    (service,) = manifests.load(manifests.HUB_NODEPORT)
    assert service["spec"]["type"] == "NodePort"
    assert [p["name"] for p in service["spec"]["ports"]] == ["grpc"]
    assert service["spec"]["selector"]["mchub.antrea.io/hub-role"] == "leader"
