"""Services: ClusterIP and NodePort allocation, defaults and the apiserver's validation text.

Members discover a cluster's Service CIDR by creating a Service with clusterIP
0.0.0.0 and parsing the Invalid error, so the out-of-range message matches
kube-apiserver's word for word:
`Service "x" is invalid: spec.clusterIPs: Invalid value: []string{"0.0.0.0"}: failed to
allocate IP 0.0.0.0: the provided IP (0.0.0.0) is not in the valid range. The range of
valid IPs is 10.96.0.0/12`.
"""

from __future__ import annotations

import ipaddress
import random
from typing import Any

from kube.resources import Obj
from sandbox import errors
from sandbox.errors import FieldError, go_string, go_string_slice
from sandbox.kinds.base import KindBehaviour

_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
NODE_PORT_RANGE = (30000, 32767)


class ClusterIPAllocator:
    """Hands out addresses of one Service CIDR; the first host address is the kubernetes Service's."""

    def __init__(self, cidr: str, seed: str) -> None:
        self.network = ipaddress.ip_network(cidr, strict=False)
        self.cidr = str(self.network)
        self._used: set[str] = set()
        self._random = random.Random(seed)
        self.family = "IPv4" if self.network.version == 4 else "IPv6"

    @property
    def first_host(self) -> str:
        return str(self.network.network_address + 1)

    def _usable(self) -> range:
        last = self.network.num_addresses - (1 if self.network.version == 4 else 0)
        return range(1, max(last, 1))

    def contains(self, ip: str) -> bool:
        address = ipaddress.ip_address(ip)
        if address.version != self.network.version or address not in self.network:
            return False
        return int(address) - int(self.network.network_address) in self._usable()

    def is_used(self, ip: str) -> bool:
        return ip in self._used

    def reserve(self, ip: str) -> None:
        self._used.add(ip)

    def release(self, ip: str) -> None:
        self._used.discard(ip)

    def pick_free(self) -> str | None:
        usable = self._usable()
        for _ in range(64):
            candidate = str(self.network.network_address + self._random.choice(usable))
            if candidate not in self._used:
                return candidate
        for offset in usable:
            candidate = str(self.network.network_address + offset)
            if candidate not in self._used:
                return candidate
        return None


class ServiceBehaviour(KindBehaviour):
    def __init__(self, allocator: ClusterIPAllocator) -> None:
        self.ips = allocator
        self._node_ports: set[int] = set()
        self._random = random.Random(allocator.cidr)

    # Create

    def prepare_create(self, obj: Obj, *, dry_run: bool) -> None:
        name = obj["metadata"]["name"]
        spec = obj.setdefault("spec", {})
        self._default(spec)
        problems = self._validate(spec)
        if problems:
            raise errors.invalid("", "Service", name, problems)
        self._assign_cluster_ip(name, spec, dry_run=dry_run)
        self._assign_node_ports(name, spec, dry_run=dry_run, previous=None)
        obj["status"] = {"loadBalancer": {}}

    def _default(self, spec: dict[str, Any]) -> None:
        spec.setdefault("type", "ClusterIP")
        if spec["type"] == "ExternalName":
            return
        spec.setdefault("sessionAffinity", "None")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        if spec["type"] in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
        for port in spec.get("ports") or []:
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))

    def _validate(self, spec: dict[str, Any]) -> list[FieldError]:
        problems: list[FieldError] = []
        kind = spec.get("type")
        if kind not in _TYPES:
            supported = ", ".join(go_string(t) for t in _TYPES)
            return [
                FieldError(
                    "spec.type", f"supported values: {supported}", go_string(str(kind)), "FieldValueNotSupported"
                )
            ]
        ports = spec.get("ports") or []
        if kind == "ExternalName":
            if not spec.get("externalName"):
                problems.append(FieldError("spec.externalName", "", kind="FieldValueRequired"))
            if spec.get("clusterIP"):
                problems.append(
                    FieldError(
                        "spec.clusterIP",
                        "may not be set for ExternalName services",
                        go_string(spec["clusterIP"]),
                        "FieldValueForbidden",
                    )
                )
            return problems
        if not ports and spec.get("clusterIP") != "None":
            problems.append(FieldError("spec.ports", "", kind="FieldValueRequired"))
        seen: set[tuple[Any, Any]] = set()
        for i, port in enumerate(ports):
            number = port.get("port")
            if not isinstance(number, int) or not 1 <= number <= 65535:
                problems.append(
                    FieldError(f"spec.ports[{i}].port", "must be between 1 and 65535, inclusive", str(number))
                )
            if len(ports) > 1 and not port.get("name"):
                problems.append(FieldError(f"spec.ports[{i}].name", "", kind="FieldValueRequired"))
            key = (number, port.get("protocol"))
            if key in seen:
                problems.append(
                    FieldError(f"spec.ports[{i}]", "", f"{{{number} {port.get('protocol')}}}", "FieldValueDuplicate")
                )
            seen.add(key)
        return problems

    def _assign_cluster_ip(self, name: str, spec: dict[str, Any], *, dry_run: bool) -> None:
        if spec["type"] == "ExternalName":
            spec.pop("clusterIPs", None)
            return
        wanted = spec.get("clusterIP") or (spec.get("clusterIPs") or [""])[0]
        if wanted == "None":
            spec["clusterIP"], spec["clusterIPs"] = "None", ["None"]
            self._families(spec)
            return
        if wanted:
            self._check_requested_ip(name, wanted)
            ip = wanted
        else:
            free = self.ips.pick_free()
            if free is None:
                raise errors.ApiError(
                    500, "InternalError", "Internal error occurred: failed to allocate a serviceIP: range is full"
                )
            ip = free
        if not dry_run:
            self.ips.reserve(ip)
        spec["clusterIP"], spec["clusterIPs"] = ip, [ip]
        self._families(spec)

    def _families(self, spec: dict[str, Any]) -> None:
        spec.setdefault("ipFamilies", [self.ips.family])
        spec.setdefault("ipFamilyPolicy", "SingleStack")

    def _check_requested_ip(self, name: str, ip: str) -> None:
        try:
            in_range = self.ips.contains(ip)
        except ValueError:
            raise errors.invalid(
                "",
                "Service",
                name,
                [
                    FieldError(
                        "spec.clusterIPs[0]",
                        "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                        go_string(ip),
                    )
                ],
            ) from None
        if not in_range:
            detail = (
                f"failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. "
                f"The range of valid IPs is {self.ips.cidr}"
            )
        elif self.ips.is_used(ip):
            detail = f"failed to allocate IP {ip}: provided IP is already allocated"
        else:
            return
        raise errors.invalid("", "Service", name, [FieldError("spec.clusterIPs", detail, go_string_slice([ip]))])

    def _assign_node_ports(
        self, name: str, spec: dict[str, Any], *, dry_run: bool, previous: dict[str, Any] | None
    ) -> None:
        if spec["type"] not in ("NodePort", "LoadBalancer"):
            for port in spec.get("ports") or []:
                port.pop("nodePort", None)
            return
        earlier = {p.get("port"): p.get("nodePort") for p in (previous or {}).get("ports") or []}
        for port in spec.get("ports") or []:
            if not port.get("nodePort") and earlier.get(port.get("port")):
                port["nodePort"] = earlier[port.get("port")]
            if port.get("nodePort"):
                if not dry_run:
                    self._node_ports.add(port["nodePort"])
                continue
            low, high = NODE_PORT_RANGE
            free = [p for p in range(low, high + 1) if p not in self._node_ports]
            if not free:
                raise errors.ApiError(500, "InternalError", "Internal error occurred: range is full")
            port["nodePort"] = self._random.choice(free)
            if not dry_run:
                self._node_ports.add(port["nodePort"])

    # Update

    def prepare_update(self, old: Obj, new: Obj, *, dry_run: bool) -> None:
        name = new["metadata"]["name"]
        spec, old_spec = new.setdefault("spec", {}), old.get("spec") or {}
        self._default(spec)
        problems = self._validate(spec)
        if problems:
            raise errors.invalid("", "Service", name, problems)
        old_ip = old_spec.get("clusterIP") or ""
        had_ip = old_spec.get("type") != "ExternalName"
        needs_ip = spec["type"] != "ExternalName"
        if had_ip and needs_ip:
            wanted = spec.get("clusterIP") or (spec.get("clusterIPs") or [""])[0]
            if wanted and wanted != old_ip:
                raise errors.invalid(
                    "",
                    "Service",
                    name,
                    [FieldError("spec.clusterIPs[0]", "may not change once set", go_string_slice([wanted]))],
                )
            spec["clusterIP"], spec["clusterIPs"] = old_ip, list(old_spec.get("clusterIPs") or [old_ip])
            for key in ("ipFamilies", "ipFamilyPolicy"):
                if key in old_spec:
                    spec.setdefault(key, old_spec[key])
        elif needs_ip:
            self._assign_cluster_ip(name, spec, dry_run=dry_run)
        else:
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
            if not dry_run and old_ip and old_ip != "None":
                self.ips.release(old_ip)
        self._assign_node_ports(name, spec, dry_run=dry_run, previous=old_spec)

    def released(self, obj: Obj) -> None:
        spec = obj.get("spec") or {}
        for ip in spec.get("clusterIPs") or [spec.get("clusterIP")]:
            if ip and ip != "None":
                self.ips.release(ip)
        for port in spec.get("ports") or []:
            self._node_ports.discard(port.get("nodePort", 0))
