"""ServiceAccount tokens checked with the leader cluster's TokenReview API.

This is how the hub authenticates members in production, as Antrea's leader
does: each member holds a token of a ServiceAccount in the leader Namespace.
The ServiceAccount's annotation `multicluster.antrea.io/cluster-id` names the
member it speaks for; the value `*` marks a ServiceAccount shared by several
members (the default `antrea-mc-member-access-sa`), whose callers must name
their cluster on each call. A ServiceAccount without the annotation, or in
another Namespace, is not a member. Answers are cached briefly so a stream of
calls costs one review. A review the API server fails to give says nothing of
the token: it raises Unavailable (the caller retries) and is not cached.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time

from hub.auth.identity import Authenticator, Identity
from hub.errors import Unavailable, bounded, quote
from kube.client import KubeClient
from kube.errors import KubeError, NotFound
from kube.resources import SERVICE_ACCOUNTS, TOKEN_REVIEWS
from mcapi import names

log = logging.getLogger(__name__)

ANY_CLUSTER = "*"
# The API server's error texts are not client values, but are cut to this in logs and refusals.
_DETAIL_BYTES = 512
_SA_PREFIX = "system:serviceaccount:"


class TokenReviewAuthenticator:
    def __init__(self, client: KubeClient, namespace: str, *, cache_seconds: float = 30.0) -> None:
        self._client = client
        self._namespace = namespace
        self._cache_seconds = cache_seconds
        self._cache: dict[str, tuple[float, Identity | None]] = {}
        self._lock = asyncio.Lock()

    async def authenticate(self, token: str) -> Identity | None:
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._cache.get(key)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            return cached[1]
        identity = await self._review(token)
        async with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[key] = (now + self._cache_seconds, identity)
        return identity

    async def _review(self, token: str) -> Identity | None:
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        try:
            answer = await self._client.create(TOKEN_REVIEWS, review)
        except KubeError as exc:
            detail = bounded(str(exc), _DETAIL_BYTES)
            log.warning("token review failed", extra={"error": detail})
            raise Unavailable(f"the leader cluster could not review the token: {detail}") from exc
        status = answer.get("status") or {}
        username = str((status.get("user") or {}).get("username", ""))
        if not status.get("authenticated") or not username.startswith(_SA_PREFIX):
            return None
        namespace, _, account = username.removeprefix(_SA_PREFIX).partition(":")
        if namespace != self._namespace:
            log.info("token of a ServiceAccount outside the leader Namespace refused", extra={"user": quote(username)})
            return None
        try:
            sa = await self._client.get(SERVICE_ACCOUNTS, account, namespace)
        except NotFound:
            return None
        except KubeError as exc:
            where, detail = quote(f"{namespace}/{account}"), bounded(str(exc), _DETAIL_BYTES)
            log.warning("service account lookup failed", extra={"serviceAccount": where, "error": detail})
            raise Unavailable(f"the leader cluster could not read ServiceAccount {where}: {detail}") from exc
        cluster_id = ((sa.get("metadata") or {}).get("annotations") or {}).get(names.ANNOTATION_CLUSTER_ID, "")
        if cluster_id == ANY_CLUSTER:
            return Identity(any_cluster=True)
        if not cluster_id or not names.is_valid_cluster_id(cluster_id):
            log.info(
                "service account is not annotated with a member cluster ID",
                extra={"serviceAccount": quote(f"{namespace}/{account}"), "annotation": names.ANNOTATION_CLUSTER_ID},
            )
            return None
        return Identity(cluster_id=cluster_id)


class ChainAuthenticator:
    """Asks each authenticator in turn; the first that knows the token answers."""

    def __init__(self, *authenticators: Authenticator) -> None:
        self._chain = authenticators

    async def authenticate(self, token: str) -> Identity | None:
        for authenticator in self._chain:
            identity = await authenticator.authenticate(token)
            if identity is not None:
                return identity
        return None
