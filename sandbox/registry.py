"""The generic object lifecycle: create, update, patch, delete with apiserver semantics.

Covers what every kind shares: names and generateName, uid and timestamps,
optimistic concurrency (409 on a stale resourceVersion), generation bumps on spec
changes, the status subresource split, finalizers and deletionTimestamp, dry-run
and no-op updates that do not bump resourceVersion. Kind-specific rules plug in
as KindBehaviours.

Faithfulness notes: managedFields are not tracked; server-side apply is a merge of
the applied configuration into the live object (strategic for built-in kinds, JSON
merge for custom resources) without field ownership, so it never removes fields a
previous apply set and never reports field-manager conflicts.
"""

from __future__ import annotations

import copy
import json
import uuid
from dataclasses import dataclass
from typing import Any

import yaml

from kube.resources import Obj
from sandbox import errors
from sandbox.kinds.base import KindBehaviour
from sandbox.names import check_name, generate_name
from sandbox.patch import json_patch, merge_patch
from sandbox.resources import GroupResource, ResourceType
from sandbox.store import ObjectStore
from sandbox.strategic_merge import strategic_merge_patch
from sandbox.timefmt import now_rfc3339

NAMESPACES: GroupResource = ("", "namespaces")

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


@dataclass(frozen=True)
class DeleteOptions:
    propagation: str = "Background"
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False


_DEFAULT_BEHAVIOUR = KindBehaviour()


def _meta(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def _content(obj: Obj, without_status: bool) -> Obj:
    skipped = {"metadata", "apiVersion", "kind"} | ({"status"} if without_status else set())
    return {k: v for k, v in obj.items() if k not in skipped}


def _drop_empty_metadata(obj: Obj) -> None:
    """ObjectMeta is a typed struct even for custom resources: empty maps and lists vanish."""
    meta = obj["metadata"]
    for key in ("labels", "annotations", "finalizers", "ownerReferences", "managedFields"):
        if key in meta and not meta[key]:
            del meta[key]


def _comparable(obj: Obj) -> Obj:
    meta = {k: v for k, v in obj.get("metadata", {}).items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


class Registry:
    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self._behaviours: dict[GroupResource, KindBehaviour] = {}

    def register_behaviour(self, resource: GroupResource, behaviour: KindBehaviour) -> None:
        self._behaviours[resource] = behaviour

    def behaviour(self, resource: GroupResource) -> KindBehaviour:
        return self._behaviours.get(resource, _DEFAULT_BEHAVIOUR)

    # Reads

    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        stored = self.store.get(rt.storage_key, namespace if rt.namespaced else "", name)
        if stored is None:
            raise errors.not_found(rt.group, rt.plural, name)
        return stored

    # Create

    def create(self, rt: ResourceType, namespace: str, body: Obj, *, dry_run: bool = False) -> Obj:
        """The create verb (POST): the kind may refuse it before the body is read."""
        self.behaviour(rt.storage_key).admit_create()
        return self._create(rt, namespace, body, dry_run=dry_run)

    def _create(self, rt: ResourceType, namespace: str, body: Obj, *, dry_run: bool = False) -> Obj:
        """A new object, from a create or from an update or apply of a missing one (verbs update, patch)."""
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        obj = rt.to_storage(copy.deepcopy(body))
        if rt.codec:
            obj = rt.codec.decode(obj)
        meta = _meta(obj)
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and body_ns != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = generate_name(meta["generateName"])
        name = meta.get("name") or ""
        if not name:
            raise errors.invalid(
                rt.group,
                rt.kind,
                "",
                [errors.FieldError("metadata.name", "name or generateName is required", kind="FieldValueRequired")],
            )
        # Admission (the namespace's state) comes before validation, as in the apiserver.
        if rt.namespaced:
            self._check_namespace_open(rt, namespace, name)
        for managed in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"):
            meta.pop(managed, None)
        behaviour = self.behaviour(rt.storage_key)
        if rt.status_subresource and not behaviour.keeps_status_on_create:
            obj.pop("status", None)
        problems = check_name(rt.plural, name) + (rt.codec.validate(obj, None) if rt.codec else [])
        if problems:
            raise errors.invalid(rt.group, rt.kind, name, problems)
        if self.store.get(rt.storage_key, namespace if rt.namespaced else "", name) is not None:
            raise errors.already_exists(rt.group, rt.plural, name)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if rt.tracks_generation or rt.from_crd:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        _drop_empty_metadata(obj)
        behaviour.prepare_create(obj, dry_run=dry_run)
        if rt.codec:
            obj = rt.codec.encode(obj)
        if dry_run:
            return rt.to_api(obj)
        return rt.to_api(self.store.put(rt.storage_key, obj))

    def _check_namespace_open(self, rt: ResourceType, namespace: str, name: str) -> None:
        ns = self.store.get(NAMESPACES, "", namespace)
        if ns is None:
            raise errors.not_found("", "namespaces", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise errors.namespace_terminating(rt.group, rt.plural, name, namespace)

    # Update

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Obj,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        ns = namespace if rt.namespaced else ""
        old = self.store.get(rt.storage_key, ns, name)
        if old is None:
            if rt.allow_create_on_update and subresource is None:
                return self._create(rt, namespace, body, dry_run=dry_run)
            raise errors.not_found(rt.group, rt.plural, name)
        new = rt.to_storage(copy.deepcopy(body))
        if rt.codec:
            new = rt.codec.decode(new)
        meta = _meta(new)
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.group, rt.plural, name)
        # The update applies to the object as the request's version sees it (for custom
        # resources: pruned by that version's schema), and its generation follows that view.
        result = self._merge_update(rt, rt.read(old), new, subresource)
        _drop_empty_metadata(result)
        if rt.codec:
            problems = rt.codec.validate(result, subresource)
            if problems:
                raise errors.invalid(rt.group, rt.kind, name, problems)
        behaviour = self.behaviour(rt.storage_key)
        behaviour.prepare_update(old, result, dry_run=dry_run)
        if rt.codec:
            result = rt.codec.encode(result)
        if _comparable(result) == _comparable(old):
            return rt.to_api(old)
        if dry_run:
            return rt.to_api(result)
        if result["metadata"].get("deletionTimestamp") and not behaviour.blocks_removal(result):
            # The write that clears the last finalizer is the deletion: watchers see DELETED only.
            return rt.to_api(self._remove(rt.storage_key, result))
        return rt.to_api(self.store.put(rt.storage_key, result))

    def _merge_update(self, rt: ResourceType, old: Obj, new: Obj, subresource: str | None) -> Obj:
        if subresource == "status":
            result = copy.deepcopy(old)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            return result
        if subresource == "finalize":
            result = copy.deepcopy(old)
            result.setdefault("spec", {})["finalizers"] = (new.get("spec") or {}).get("finalizers") or []
            return result
        result = new
        meta = _meta(result)
        old_meta = old["metadata"]
        for managed in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if managed in old_meta:
                meta[managed] = old_meta[managed]
            else:
                meta.pop(managed, None)
        meta["name"] = old_meta["name"]
        if "namespace" in old_meta:
            meta["namespace"] = old_meta["namespace"]
        meta.pop("managedFields", None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        result["apiVersion"] = old["apiVersion"]
        result["kind"] = old.get("kind", rt.kind)
        if rt.status_subresource:
            if "status" in old:
                result["status"] = copy.deepcopy(old["status"])
            else:
                result.pop("status", None)
        if "generation" in old_meta and _content(result, rt.status_subresource) != _content(old, rt.status_subresource):
            meta["generation"] = old_meta["generation"] + 1
        return result

    # Patch

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        raw: bytes,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        patch_doc = self._parse_patch(rt, content_type, raw)
        ns = namespace if rt.namespaced else ""
        stored = self.store.get(rt.storage_key, ns, name)
        if stored is None:
            if content_type == APPLY_PATCH and subresource is None:
                if isinstance(patch_doc, dict):
                    _meta(patch_doc).setdefault("name", name)
                return self._create(rt, namespace, patch_doc, dry_run=dry_run)
            raise errors.not_found(rt.group, rt.plural, name)
        current = rt.to_api(stored)
        if content_type == JSON_PATCH:
            patched = json_patch(current, patch_doc)
        elif content_type == MERGE_PATCH or (content_type == APPLY_PATCH and not rt.strategic_merge):
            patched = merge_patch(current, patch_doc)
        else:
            patched = strategic_merge_patch(rt.kind, current, patch_doc)
        if content_type == APPLY_PATCH:
            # Apply does not carry a precondition unless the configuration names one.
            wanted = _meta(patch_doc).get("resourceVersion") if isinstance(patch_doc, dict) else None
            _meta(patched)["resourceVersion"] = wanted or stored["metadata"]["resourceVersion"]
        return self.update(rt, namespace, name, patched, subresource=subresource, dry_run=dry_run)

    def _parse_patch(self, rt: ResourceType, content_type: str, raw: bytes) -> Any:
        accepted = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH] + ([STRATEGIC_PATCH] if rt.strategic_merge else [])
        if content_type not in accepted:
            raise errors.unsupported_media_type(content_type, accepted)
        try:
            if content_type == APPLY_PATCH:
                return yaml.safe_load(raw.decode() or "{}")
            return json.loads(raw or b"null")
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.bad_request(f"error decoding patch: {exc}") from exc

    # Delete

    def delete(self, rt: ResourceType, namespace: str, name: str, options: DeleteOptions) -> Obj:
        old = self.get(rt, namespace, name)
        meta = old["metadata"]
        if options.uid and options.uid != meta.get("uid"):
            raise errors.ApiError(
                409,
                "Conflict",
                f"Operation cannot be fulfilled on {errors.qualified_resource(rt.group, rt.plural)} "
                f'"{name}": Precondition failed: UID in precondition: {options.uid}, UID in object meta: '
                f"{meta.get('uid')}",
            )
        if options.resource_version and options.resource_version != meta.get("resourceVersion"):
            raise errors.conflict(rt.group, rt.plural, name)
        if options.dry_run:
            return rt.to_api(old)
        behaviour = self.behaviour(rt.storage_key)
        finalizers = list(meta.get("finalizers") or [])
        if options.propagation == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        elif options.propagation == "Orphan" and "orphan" not in finalizers:
            finalizers.append("orphan")
        candidate = {**old, "metadata": {**meta, "finalizers": finalizers}}
        if not finalizers:
            candidate["metadata"].pop("finalizers")
        if not behaviour.blocks_removal(candidate):
            return rt.to_api(self._remove(rt.storage_key, old))
        if meta.get("deletionTimestamp") and finalizers == list(meta.get("finalizers") or []):
            return rt.to_api(old)
        updated = copy.deepcopy(candidate)
        updated["metadata"].setdefault("deletionTimestamp", now_rfc3339())
        updated["metadata"].setdefault("deletionGracePeriodSeconds", 0)
        behaviour.deletion_requested(updated)
        return rt.to_api(self.store.put(rt.storage_key, updated))

    def _remove(self, resource: GroupResource, obj: Obj) -> Obj:
        final = self.store.remove(resource, obj)
        self.behaviour(resource).released(obj)
        return final

    def remove_finalizer(self, resource: GroupResource, obj: Obj, finalizer: str) -> None:
        """Controllers' way to drop their finalizer (deleting the object if it was the last)."""
        current = self.store.get(resource, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if current is None or finalizer not in (current["metadata"].get("finalizers") or []):
            return
        updated = copy.deepcopy(current)
        updated["metadata"]["finalizers"] = [f for f in updated["metadata"]["finalizers"] if f != finalizer]
        if not updated["metadata"]["finalizers"]:
            del updated["metadata"]["finalizers"]
        if updated["metadata"].get("deletionTimestamp") and not self.behaviour(resource).blocks_removal(updated):
            self._remove(resource, updated)
        else:
            self.store.put(resource, updated)

    def put_internal(self, resource: GroupResource, obj: Obj) -> Obj:
        """A controller's write of a whole object it built from the stored one."""
        return self.store.put(resource, obj)
