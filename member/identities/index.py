"""Which normalized labels the Pods of a cluster have, and how many Pods have each. Pure.

Fed object by object from the Pod and Namespace watches (in any order: a Pod whose
Namespace is not known yet is held and counted once the Namespace arrives). Every change
answers the labels whose count went from zero to some or from some to zero, so the
caller touches only the identities that appeared or went.

A Pod counts in every phase (a Pending Pod has labels, and policies select it); a Pod
being deleted (``deletionTimestamp`` set) does not: it is leaving, as in Antrea, which
drops it when the deletion begins.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from kube.resources import Obj
from mcapi.labels import format_labels, format_namespace_labels, join_normalized_label

PodKey = tuple[str, str]  # (namespace, name)


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _labels(obj: Obj) -> dict[str, str]:
    labels = _meta(obj).get("labels")
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


def pod_key(pod: Obj) -> PodKey:
    meta = _meta(pod)
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def counts_as_identity(pod: Obj) -> bool:
    """Every Pod except one being deleted."""
    return not _meta(pod).get("deletionTimestamp")


class IdentityIndex:
    def __init__(self) -> None:
        # Namespace -> its formatted label set (kubernetes.io/metadata.name included).
        self._namespaces: dict[str, str] = {}
        # Pod -> its formatted label set, for every Pod that counts (known Namespace or not).
        self._pods: dict[PodKey, str] = {}
        self._pods_by_namespace: dict[str, set[PodKey]] = {}
        # Pod -> the normalized label it adds to the counts (only Pods of known Namespaces).
        self._counted: dict[PodKey, str] = {}
        self._counts: Counter[str] = Counter()

    # ---- what the watches tell -----------------------------------------------

    def set_namespace(self, namespace: Obj) -> set[str]:
        name = str(_meta(namespace).get("name") or "")
        formatted = format_namespace_labels(name, _labels(namespace))
        if self._namespaces.get(name) == formatted:
            return set()
        self._namespaces[name] = formatted
        return self._recount_namespace(name)

    def remove_namespace(self, name: str) -> set[str]:
        if self._namespaces.pop(name, None) is None:
            return set()
        return self._recount_namespace(name)

    def set_pod(self, pod: Obj) -> set[str]:
        key = pod_key(pod)
        if not counts_as_identity(pod):
            return self.remove_pod(key)
        formatted = format_labels(_labels(pod))
        if self._pods.get(key) == formatted:
            return set()
        self._pods[key] = formatted
        self._pods_by_namespace.setdefault(key[0], set()).add(key)
        return self._recount_pod(key)

    def remove_pod(self, key: PodKey) -> set[str]:
        if self._pods.pop(key, None) is None:
            return set()
        in_namespace = self._pods_by_namespace.get(key[0])
        if in_namespace is not None:
            in_namespace.discard(key)
            if not in_namespace:
                del self._pods_by_namespace[key[0]]
        return self._recount_pod(key)

    # ---- what the controller asks --------------------------------------------

    def count(self, label: str) -> int:
        return self._counts.get(label, 0)

    def labels(self) -> set[str]:
        """Every normalized label some Pod has now."""
        return set(self._counts)

    def __len__(self) -> int:
        return len(self._counts)

    # ---- counting ------------------------------------------------------------

    def _recount_namespace(self, namespace: str) -> set[str]:
        changed: set[str] = set()
        for key in list(self._pods_by_namespace.get(namespace, ())):
            changed |= self._recount_pod(key)
        return changed

    def _recount_pod(self, key: PodKey) -> set[str]:
        """Move the Pod's count to the label it has now; the labels that appeared or went."""
        formatted_ns = self._namespaces.get(key[0])
        formatted_pod = self._pods.get(key)
        now = (
            join_normalized_label(formatted_ns, formatted_pod)
            if formatted_ns is not None and formatted_pod is not None
            else None
        )
        before = self._counted.get(key)
        if before == now:
            return set()
        changed: set[str] = set()
        if before is not None:
            del self._counted[key]
            self._counts[before] -= 1
            if self._counts[before] == 0:
                del self._counts[before]
                changed.add(before)
        if now is not None:
            self._counted[key] = now
            self._counts[now] += 1
            if self._counts[now] == 1:
                changed.add(now)
        return changed
