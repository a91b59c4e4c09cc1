"""Cluster DNS for the test clusters, as a user's CoreDNS with `mcctl get dnsconfig`'s stanza.

envtest bundles no DNS server and neither Debian nor PyPI packages a Kubernetes-aware one, so
each member cluster gets Debian's dnsmasq at the kubelets' ``clusterDNS`` address (Service
``kube-dns`` in kube-system), answering

- ``<svc>.<ns>.svc.cluster.local`` with the Service's ClusterIP, from a hosts file a sidecar
  keeps current (hack/nodeset/service_hosts.py: list and watch Services), NXDOMAIN for every
  other name under cluster.local (the resolver's search list asks many), without delay;
- ``clusterset.local`` by forwarding it to the member's own ``mchub-clusterset-dns`` Service,
  as CoreDNS's ``forward`` stanza does; nothing is cached, so an answer never outlives the
  import (mchub's TTL is 5 s) and its authoritative flag reaches the client;
- anything else: REFUSED at once (nothing outside is reachable here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hack.nodeset.clusters import Cluster
from hack.nodeset.images import TOOLS_IMAGE as IMAGE
from hack.nodeset.kubectl import until

NAMESPACE = "kube-system"
NAME = "cluster-dns"
FEEDER = Path(__file__).with_name("service_hosts.py")


def manifest(cluster_dns_ip: str, clusterset_dns_ip: str, domain: str = "cluster.local") -> list[dict[str, Any]]:
    labels = {"app": NAME}
    dnsmasq = [
        "dnsmasq", "--keep-in-foreground", "--log-facility=-", "--user=root", "--group=root",
        "--no-resolv", "--no-hosts", "--cache-size=0", f"--local=/{domain}/",
        f"--server=/clusterset.local/{clusterset_dns_ip}", "--hostsdir=/hosts",
    ]  # fmt: skip
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NAME, "namespace": NAMESPACE}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"test:{NAME}"},
            "rules": [{"apiGroups": [""], "resources": ["services"], "verbs": ["list", "watch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"test:{NAME}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"test:{NAME}"},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "data": {"service_hosts.py": FEEDER.read_text()},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": NAME,
                        "dnsPolicy": "Default",
                        "terminationGracePeriodSeconds": 1,
                        "containers": [
                            {
                                "name": "dnsmasq",
                                "image": IMAGE,
                                "imagePullPolicy": "IfNotPresent",
                                "command": dnsmasq,
                                "ports": [
                                    {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                                    {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
                                ],
                                "readinessProbe": {"tcpSocket": {"port": 53}, "periodSeconds": 2},
                                "volumeMounts": [{"name": "hosts", "mountPath": "/hosts"}],
                            },
                            {
                                "name": "services",
                                "image": IMAGE,
                                "imagePullPolicy": "IfNotPresent",
                                "command": ["python3", "/feeder/service_hosts.py", "/hosts/services", domain],
                                "volumeMounts": [
                                    {"name": "hosts", "mountPath": "/hosts"},
                                    {"name": "feeder", "mountPath": "/feeder"},
                                ],
                            },
                        ],
                        "volumes": [
                            {"name": "hosts", "emptyDir": {}},
                            {"name": "feeder", "configMap": {"name": NAME}},
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": NAMESPACE, "labels": {"k8s-app": "kube-dns"}},
            "spec": {
                "clusterIP": cluster_dns_ip,
                "selector": labels,
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP"},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
                ],
            },
        },
    ]


def install(cluster: Cluster, cluster_dns_ip: str) -> None:
    """The cluster's DNS at ``cluster_dns_ip`` (the kubelets' clusterDNS), forwarding
    clusterset.local to the member's DNS Service (so after the member manifest)."""
    clusterset_dns = until(
        f"mchub-clusterset-dns in {cluster.name}",
        lambda: cluster.kubectl(
            "get", "service", "mchub-clusterset-dns", "-n", NAMESPACE, "-o", "jsonpath={.spec.clusterIP}"
        ),
    )
    cluster.kubectl.apply(yaml.safe_dump_all(manifest(cluster_dns_ip, clusterset_dns)))
    cluster.kubectl("-n", NAMESPACE, "rollout", "status", f"deployment/{NAME}", "--timeout=120s", timeout=130)
