"""The shadow Service that makes an exported Service answer at its global address (pure).

In a globally addressed member with endpointIPType ClusterIP, other members reach an exported
Service at its global address G. kube-proxy in iptables mode translates a ClusterIP once and
not the result again, so G cannot lead to the ClusterIP; it can lead to the Pods. The shadow
``mchub-global-<name>`` beside the Service has the Service's selector and ports and G as its
one externalIP, so kube-proxy on the Gateway translates G straight to the Pods (what Submariner
Globalnet does too). It is labelled and annotated as mchub's, and goes with the export.

(Not ``antrea-mc-global-<name>``: that is the name the member's importer gives the ClusterSet
Service ``global-<name>``.)
"""

from __future__ import annotations

import hashlib
from typing import Any

from kube.resources import Obj
from mcapi import names

SHADOW_PREFIX = "mchub-global-"
# On every shadow: the Service it shadows (the importer's and the exporter's watches leave
# objects with it out, and the member knows its own by it).
LABEL_SHADOW_OF = "mchub.antrea.io/global-address-of"
ANNOTATION_SHADOW_OF = LABEL_SHADOW_OF
_MAX_NAME = 63


def shadow_name(service_name: str) -> str:
    """``mchub-global-<name>``; a name too long for a Service keeps a prefix and a hash."""
    name = f"{SHADOW_PREFIX}{service_name}"
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(service_name.encode()).hexdigest()[:10]
    return f"{name[: _MAX_NAME - len(digest) - 1].rstrip('-')}-{digest}"


def has_selector(service: Obj) -> bool:
    return bool((service.get("spec") or {}).get("selector"))


def is_shadow(obj: Obj) -> bool:
    return LABEL_SHADOW_OF in ((obj.get("metadata") or {}).get("labels") or {})


def desired_shadow(service: Obj, global_ip: str) -> Obj:
    """The shadow of ``service`` (which has a selector) answering at ``global_ip``."""
    meta = service.get("metadata") or {}
    spec = service.get("spec") or {}
    ports: list[dict[str, Any]] = []
    for port in spec.get("ports") or []:
        entry: dict[str, Any] = {
            "port": port.get("port"),
            "protocol": port.get("protocol") or "TCP",
            "targetPort": port.get("targetPort", port.get("port")),
        }
        if port.get("name"):
            entry["name"] = port["name"]
        ports.append(entry)
    name = str(meta.get("name", ""))
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": shadow_name(name),
            "namespace": meta.get("namespace"),
            "labels": {LABEL_SHADOW_OF: name},
            "annotations": {ANNOTATION_SHADOW_OF: name, names.ANNOTATION_GLOBAL_ADDRESS: global_ip},
        },
        "spec": {
            "type": "ClusterIP",
            "selector": dict(spec.get("selector") or {}),
            "ports": ports,
            "externalIPs": [global_ip],
            # The Service's affinity holds through its global address too.
            "sessionAffinity": spec.get("sessionAffinity") or "None",
        },
    }


def owns(obj: Obj) -> bool:
    """Whether an object under a shadow's name is mchub's shadow (else a user's: left alone)."""
    return ANNOTATION_SHADOW_OF in ((obj.get("metadata") or {}).get("annotations") or {})
