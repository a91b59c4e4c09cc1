"""Server-side Table rendering (Accept: application/json;as=Table;v=v1;g=meta.k8s.io).

`kubectl get` asks for Tables and prints their columns. Custom resources use their
CRD's additionalPrinterColumns (dates shown as ages, like the apiserver does);
built-in kinds get the columns kubectl users know.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kube.resources import Obj
from sandbox.jsonpath import evaluate
from sandbox.resources import PrinterColumn, ResourceType
from sandbox.timefmt import human_age

Cell = Any


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str
    cell: Callable[[Obj], Cell]
    format: str = ""
    priority: int = 0

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def _age(obj: Obj) -> str:
    return human_age(obj["metadata"].get("creationTimestamp"))


NAME = Column("Name", "string", "Name must be unique within a namespace.", _name, "name")
AGE = Column("Age", "string", "Time since the object was created.", _age)


def _get(obj: Obj, *path: str) -> Any:
    value: Any = obj
    for part in path:
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _or_none(value: Any) -> str:
    return str(value) if value not in (None, "", []) else "<none>"


def _service_external_ip(svc: Obj) -> str:
    spec = svc.get("spec") or {}
    kind = spec.get("type", "ClusterIP")
    if kind == "ExternalName":
        return str(spec.get("externalName", "<none>"))
    ips = [i.get("ip") or i.get("hostname") for i in _get(svc, "status", "loadBalancer", "ingress") or []]
    ips += spec.get("externalIPs") or []
    if ips:
        return ",".join(str(i) for i in ips)
    return "<pending>" if kind == "LoadBalancer" else "<none>"


def _service_ports(svc: Obj) -> str:
    parts = []
    for port in _get(svc, "spec", "ports") or []:
        node_port = f":{port['nodePort']}" if port.get("nodePort") else ""
        parts.append(f"{port.get('port')}{node_port}/{port.get('protocol', 'TCP')}")
    return ",".join(parts) or "<none>"


def _selector(svc: Obj) -> str:
    selector = _get(svc, "spec", "selector") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>"


def _endpoints(ep: Obj) -> str:
    pairs = []
    for subset in ep.get("subsets") or []:
        ports = [p.get("port") for p in subset.get("ports") or []] or [None]
        for address in subset.get("addresses") or []:
            for port in ports:
                pairs.append(f"{address.get('ip')}:{port}" if port else str(address.get("ip")))
    return _shorten(pairs)


def _shorten(values: list[str]) -> str:
    if not values:
        return "<none>"
    if len(values) > 3:
        return ",".join(values[:3]) + f" + {len(values) - 3} more..."
    return ",".join(values)


def _slice_endpoints(eps: Obj) -> str:
    return _shorten([a for e in eps.get("endpoints") or [] for a in e.get("addresses") or []])


def _slice_ports(eps: Obj) -> str:
    return ",".join(str(p.get("port")) for p in eps.get("ports") or []) or "<unset>"


def _node_status(node: Obj) -> str:
    ready = next((c for c in _get(node, "status", "conditions") or [] if c.get("type") == "Ready"), None)
    status = "Unknown"
    if ready is not None:
        status = "Ready" if ready.get("status") == "True" else "NotReady"
    if _get(node, "spec", "unschedulable"):
        status += ",SchedulingDisabled"
    return status


def _node_roles(node: Obj) -> str:
    prefix = "node-role.kubernetes.io/"
    labels = node["metadata"].get("labels") or {}
    roles = sorted(k[len(prefix) :] for k in labels if k.startswith(prefix) and k[len(prefix) :])
    return ",".join(roles) or "<none>"


def _count(value: Any) -> int:
    return len(value) if isinstance(value, dict | list) else 0


def _event_object(event: Obj) -> str:
    involved = event.get("involvedObject") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


def _event_last_seen(event: Obj) -> str:
    stamp = event.get("lastTimestamp") or event.get("eventTime") or event["metadata"].get("creationTimestamp")
    return human_age(stamp)


def _lease_holder(lease: Obj) -> str:
    return str(_get(lease, "spec", "holderIdentity") or "")


def _ready_of(obj: Obj, want: str) -> str:
    return f"{_get(obj, 'status', 'readyReplicas') or 0}/{_get(obj, 'spec', want) or 0}"


def _col(name: str, kind: str, cell: Callable[[Obj], Cell], description: str = "", priority: int = 0) -> Column:
    return Column(name, kind, description or name, cell, priority=priority)


_BUILTIN: dict[tuple[str, str], list[Column]] = {
    ("", "Namespace"): [
        NAME,
        _col("Status", "string", lambda o: _get(o, "status", "phase") or "", "The phase of the namespace."),
        AGE,
    ],
    ("", "Service"): [
        NAME,
        _col("Type", "string", lambda o: _get(o, "spec", "type") or "ClusterIP"),
        _col("Cluster-IP", "string", lambda o: _or_none(_get(o, "spec", "clusterIP"))),
        _col("External-IP", "string", _service_external_ip),
        _col("Port(s)", "string", _service_ports),
        AGE,
        _col("Selector", "string", _selector, priority=1),
    ],
    ("", "Endpoints"): [NAME, _col("Endpoints", "string", _endpoints), AGE],
    ("", "Node"): [
        NAME,
        _col("Status", "string", _node_status),
        _col("Roles", "string", _node_roles),
        AGE,
        _col("Version", "string", lambda o: _get(o, "status", "nodeInfo", "kubeletVersion") or ""),
    ],
    ("", "ConfigMap"): [
        NAME,
        _col("Data", "integer", lambda o: _count(o.get("data")) + _count(o.get("binaryData"))),
        AGE,
    ],
    ("", "Secret"): [
        NAME,
        _col("Type", "string", lambda o: o.get("type") or "Opaque"),
        _col("Data", "integer", lambda o: _count(o.get("data"))),
        AGE,
    ],
    ("", "ServiceAccount"): [NAME, _col("Secrets", "string", lambda o: _count(o.get("secrets"))), AGE],
    ("", "Pod"): [
        NAME,
        _col("Status", "string", lambda o: _get(o, "status", "phase") or "Pending"),
        _col("IP", "string", lambda o: _or_none(_get(o, "status", "podIP")), priority=1),
        _col("Node", "string", lambda o: _or_none(_get(o, "spec", "nodeName")), priority=1),
        AGE,
    ],
    ("", "Event"): [
        _col("Last Seen", "string", _event_last_seen),
        _col("Type", "string", lambda o: o.get("type") or ""),
        _col("Reason", "string", lambda o: o.get("reason") or ""),
        _col("Object", "string", _event_object),
        _col("Message", "string", lambda o: o.get("message") or ""),
    ],
    ("discovery.k8s.io", "EndpointSlice"): [
        NAME,
        _col("AddressType", "string", lambda o: o.get("addressType") or ""),
        _col("Ports", "string", _slice_ports),
        _col("Endpoints", "string", _slice_endpoints),
        AGE,
    ],
    ("coordination.k8s.io", "Lease"): [NAME, _col("Holder", "string", _lease_holder), AGE],
    ("apps", "Deployment"): [
        NAME,
        _col("Ready", "string", lambda o: _ready_of(o, "replicas")),
        _col("Up-to-date", "integer", lambda o: _get(o, "status", "updatedReplicas") or 0),
        _col("Available", "integer", lambda o: _get(o, "status", "availableReplicas") or 0),
        AGE,
    ],
    ("apps", "DaemonSet"): [
        NAME,
        _col("Desired", "integer", lambda o: _get(o, "status", "desiredNumberScheduled") or 0),
        _col("Current", "integer", lambda o: _get(o, "status", "currentNumberScheduled") or 0),
        _col("Ready", "integer", lambda o: _get(o, "status", "numberReady") or 0),
        AGE,
    ],
    ("apiextensions.k8s.io", "CustomResourceDefinition"): [
        NAME,
        _col("Created At", "date", lambda o: o["metadata"].get("creationTimestamp") or ""),
    ],
}


def _printer_cell(column: PrinterColumn) -> Callable[[Obj], Cell]:
    def cell(obj: Obj) -> Cell:
        values = evaluate(column.json_path, obj)
        if not values:
            return None
        value = values[0] if len(values) == 1 else values
        if column.type == "date":
            return human_age(value if isinstance(value, str) else None)
        if column.type == "integer" and isinstance(value, int | float | str):
            try:
                return int(value)
            except ValueError:
                return None
        if column.type == "boolean":
            return bool(value)
        if column.type == "number":
            return value
        if isinstance(value, dict | list):
            return json.dumps(value, separators=(",", ":"))
        return value

    return cell


def columns_for(rt: ResourceType) -> list[Column]:
    if rt.printer_columns is not None:
        return [NAME] + [
            Column(
                c.name,
                "string" if c.type == "date" else c.type,
                c.description or c.name,
                _printer_cell(c),
                c.format,
                c.priority,
            )
            for c in rt.printer_columns
        ]
    return _BUILTIN.get((rt.group, rt.kind), [NAME, AGE])


def _row(columns: list[Column], obj: Obj, include_object: str) -> dict[str, Any]:
    row: dict[str, Any] = {"cells": [c.cell(obj) for c in columns]}
    if include_object == "Object":
        row["object"] = obj
    elif include_object != "None":
        row["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj["metadata"],
        }
    return row


def render_table(
    rt: ResourceType,
    objects: list[Obj],
    *,
    resource_version: str,
    continue_token: str = "",
    include_object: str = "Metadata",
    with_headers: bool = True,
) -> dict[str, Any]:
    columns = columns_for(rt)
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [c.definition() for c in columns] if with_headers else None,
        "rows": [_row(columns, o, include_object) for o in objects],
    }


def wants_table(accept: str) -> bool:
    """True when the first acceptable media type the client lists is a meta.k8s.io Table."""
    for media in accept.split(","):
        params = dict(p.strip().split("=", 1) for p in media.split(";")[1:] if "=" in p)
        if params.get("as") == "Table" and params.get("g", "meta.k8s.io") == "meta.k8s.io":
            return True
    return False
