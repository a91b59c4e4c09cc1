"""Helpers for Gateway tests on sandbox clusters: Nodes as kubelets register them, and waiting
on a kind through an informer (event-driven, no polling)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kube.client import KubeClient
from kube.informer import Informer
from kube.resources import NODES, Obj, Resource
from mcapi.names import ANNOTATION_GATEWAY

WAIT = 10.0


def node_body(
    name: str,
    internal_ip: str,
    *,
    external_ip: str | None = None,
    ready: bool = True,
    gateway: bool = True,
    pod_cidr: str | None = None,
    annotations: dict[str, str] | None = None,
) -> Obj:
    notes = dict(annotations or {})
    if gateway:
        notes[ANNOTATION_GATEWAY] = "true"
    addresses = [{"type": "InternalIP", "address": internal_ip}, {"type": "Hostname", "address": name}]
    if external_ip:
        addresses.append({"type": "ExternalIP", "address": external_ip})
    body: Obj = {
        "metadata": {"name": name, "annotations": notes},
        "spec": {},
        "status": {"addresses": addresses, "conditions": [ready_condition(ready)]},
    }
    if pod_cidr:
        body["spec"] = {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]}
    return body


def ready_condition(ready: bool) -> dict[str, str]:
    return {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "NodeStatusUnknown",
        "message": "kubelet is posting ready status" if ready else "Kubelet stopped posting node status.",
    }


async def create_node(client: KubeClient, name: str, internal_ip: str, **kwargs: Any) -> Obj:
    return await client.create(NODES, node_body(name, internal_ip, **kwargs))


async def set_ready(client: KubeClient, name: str, ready: bool) -> None:
    await client.patch_status(NODES, name, {"status": {"conditions": [ready_condition(ready)]}})


async def annotate(client: KubeClient, name: str, key: str, value: str | None) -> None:
    await client.patch(NODES, name, {"metadata": {"annotations": {key: value}}})


async def until(
    client: KubeClient,
    resource: Resource,
    predicate: Callable[[list[Obj]], Any],
    *,
    namespace: str | None = None,
    within: float = WAIT,
    what: str = "",
) -> Any:
    """Watch ``resource`` until ``predicate(objects)`` is truthy; returns its value."""
    async with Informer(client, resource, namespace=namespace) as informer:
        stream = informer.events()
        try:
            async with asyncio.timeout(within):
                while True:
                    value = predicate(informer.list(namespace))
                    if value:
                        return value
                    await anext(stream)
        except TimeoutError:
            raise AssertionError(f"timed out after {within}s waiting for {what or predicate}") from None
        finally:
            stream.close()


def named(name: str) -> Callable[[list[Obj]], Obj | None]:
    return lambda objs: next((o for o in objs if o["metadata"]["name"] == name), None)


def only(name: str) -> Callable[[list[Obj]], Obj | None]:
    """The object named ``name`` when it is the only one."""
    return lambda objs: objs[0] if [o["metadata"]["name"] for o in objs] == [name] else None
