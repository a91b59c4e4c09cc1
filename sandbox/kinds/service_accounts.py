"""ServiceAccount tokens: TokenRequest, TokenReview and the legacy token Secret controller.

Like the real token controller, a Secret of type kubernetes.io/service-account-token
whose kubernetes.io/service-account.name annotation names an existing ServiceAccount
gets data.token, data.ca.crt and data.namespace filled (and the uid annotation) on
the next loop turn after it is written - or when the ServiceAccount appears. Such
a Secret without the annotation is Invalid, as on a real cluster.
"""

from __future__ import annotations

import asyncio
import base64
import copy
from datetime import UTC, datetime
from typing import Any

from kube.resources import ANNOTATION_SA_NAME, SA_TOKEN_TYPE, Obj
from sandbox import errors
from sandbox.auth import ANNOTATION_SA_UID, TokenAuthority
from sandbox.errors import FieldError
from sandbox.kinds.base import KindBehaviour
from sandbox.registry import Registry
from sandbox.store import StoredEvent

SECRETS = ("", "secrets")
SERVICE_ACCOUNTS = ("", "serviceaccounts")
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class SecretBehaviour(KindBehaviour):
    def prepare_create(self, obj: Obj, *, dry_run: bool) -> None:
        obj.setdefault("type", "Opaque")
        self._validate(obj)

    def prepare_update(self, old: Obj, new: Obj, *, dry_run: bool) -> None:
        new.setdefault("type", old.get("type", "Opaque"))
        if new["type"] != old.get("type", "Opaque"):
            raise errors.invalid(
                "",
                "Secret",
                new["metadata"]["name"],
                [FieldError("type", "field is immutable", errors.go_string(new["type"]))],
            )
        self._validate(new)

    def _validate(self, obj: Obj) -> None:
        if obj["type"] != SA_TOKEN_TYPE:
            return
        if not (obj["metadata"].get("annotations") or {}).get(ANNOTATION_SA_NAME):
            raise errors.invalid(
                "",
                "Secret",
                obj["metadata"]["name"],
                [FieldError(f"metadata.annotations[{ANNOTATION_SA_NAME}]", "", kind="FieldValueRequired")],
            )


class TokenController:
    """Fills service-account-token Secrets."""

    def __init__(self, registry: Registry, authority: TokenAuthority, ca_pem: str) -> None:
        self.registry = registry
        self.authority = authority
        self.ca_pem = ca_pem
        self._loop = asyncio.get_running_loop()

    def on_event(self, event: StoredEvent) -> None:
        if event.type == "DELETED":
            return
        if event.resource == SECRETS and event.object.get("type") == SA_TOKEN_TYPE:
            if not (event.object.get("data") or {}).get("token"):
                meta = event.object["metadata"]
                self._loop.call_soon(self._fill, meta["namespace"], meta["name"])
        elif event.resource == SERVICE_ACCOUNTS and event.type == "ADDED":
            namespace = event.namespace
            for secret in self.registry.store.list_objects(SECRETS, namespace):
                if secret.get("type") == SA_TOKEN_TYPE and not (secret.get("data") or {}).get("token"):
                    self._loop.call_soon(self._fill, namespace, secret["metadata"]["name"])

    def _fill(self, namespace: str, name: str) -> None:
        store = self.registry.store
        secret = store.get(SECRETS, namespace, name)
        if secret is None or (secret.get("data") or {}).get("token"):
            return
        if secret["metadata"].get("deletionTimestamp"):
            return
        sa_name = (secret["metadata"].get("annotations") or {}).get(ANNOTATION_SA_NAME, "")
        sa = store.get(SERVICE_ACCOUNTS, namespace, sa_name)
        if sa is None:
            return
        sa_uid = sa["metadata"]["uid"]
        token = self.authority.issue_for_secret(namespace, sa_name, sa_uid, name)
        updated = copy.deepcopy(secret)
        updated["metadata"].setdefault("annotations", {})[ANNOTATION_SA_UID] = sa_uid
        updated["data"] = {
            **(updated.get("data") or {}),
            "token": _b64(token),
            "ca.crt": _b64(self.ca_pem),
            "namespace": _b64(namespace),
        }
        self.registry.put_internal(SECRETS, updated)


def token_request(authority: TokenAuthority, sa: Obj, body: dict[str, Any]) -> dict[str, Any]:
    """The answer to POST serviceaccounts/<name>/token."""
    spec = dict(body.get("spec") or {})
    expiration = spec.get("expirationSeconds") or DEFAULT_EXPIRATION_SECONDS
    name = sa["metadata"]["name"]
    if expiration < MIN_EXPIRATION_SECONDS:
        raise errors.invalid(
            "authentication.k8s.io",
            "TokenRequest",
            name,
            [FieldError("spec.expirationSeconds", "may not specify a duration less than 10 minutes", str(expiration))],
        )
    audiences = list(spec.get("audiences") or [])
    token, expires = authority.issue_bound(
        sa["metadata"]["namespace"], name, sa["metadata"]["uid"], audiences, int(expiration)
    )
    spec["expirationSeconds"] = expiration
    spec["audiences"] = audiences or ["https://kubernetes.default.svc.cluster.local"]
    spec.setdefault("boundObjectRef", None)
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {
            "name": name,
            "namespace": sa["metadata"]["namespace"],
            "creationTimestamp": None,
        },
        "spec": spec,
        "status": {
            "token": token,
            "expirationTimestamp": datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    }
