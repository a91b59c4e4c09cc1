"""Which version of a kind the cluster serves, for kinds that exist in several.

The member and mcctl must work on clusters with the current CRDs and on clusters that still
have the legacy ones (ClusterSet v1alpha1 only, ClusterClaim v1alpha1, MCS ServiceExport
v1alpha1 or v1beta1). A version that is not served answers 404 to a list; the first that
lists wins.
"""

from __future__ import annotations

from collections.abc import Sequence

from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import Resource


async def first_served(
    client: KubeClient, candidates: Sequence[Resource], namespace: str | None = None
) -> Resource | None:
    """The first of ``candidates`` the API server lists, None when it serves none of them."""
    for resource in candidates:
        try:
            await client.list(resource, namespace, limit=1)
        except NotFound:
            continue
        return resource
    return None
