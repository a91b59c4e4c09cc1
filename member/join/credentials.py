"""The member token Secret -> how to reach the hub.

The Secret the ClusterSet names (in the member Namespace, as the user guide copies it
from the leader) holds ``token`` and ``ca.crt``, base64 in ``data`` as Secrets are
(``stringData`` is accepted too, for hand-written manifests the server has not folded).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from kube.client import KubeClient
from kube.errors import NotFound, PermanentError, TemporaryError
from kube.resources import SECRETS
from member.hubclient import EndpointError, HubEndpoint, parse_target
from member.join.spec import InvalidClusterSet, JoinSpec

TOKEN_KEY = "token"
CA_KEY = "ca.crt"


class SecretMissing(TemporaryError):
    """The token Secret does not exist (yet): the user may create it after the ClusterSet."""


class InvalidSecret(PermanentError):
    """The token Secret exists but cannot be used (no token, bad base64)."""


def _field(secret: dict[str, Any], key: str, ref: str) -> bytes | None:
    data = secret.get("data") or {}
    if key in data:
        try:
            return base64.b64decode(str(data[key]), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidSecret(f"Secret {ref}: data[{key!r}] is not base64") from None
    string_data = secret.get("stringData") or {}
    if key in string_data:
        return str(string_data[key]).encode()
    return None


def endpoint_from_secret(secret: dict[str, Any], server: str, ref: str, cluster_id: str = "") -> HubEndpoint:
    token = _field(secret, TOKEN_KEY, ref)
    if token is None or not token.strip():
        raise InvalidSecret(f"Secret {ref} has no {TOKEN_KEY!r}")
    ca = _field(secret, CA_KEY, ref)
    try:
        parse_target(server)
    except EndpointError as err:
        raise InvalidClusterSet(f"ClusterSet spec.leaders[0].server: {err}") from None
    # The cluster ID rides on every call, so a token shared by several members works.
    return HubEndpoint(server=server, token=token.decode().strip(), ca_cert=ca or None, cluster_id=cluster_id)


async def read_endpoint(client: KubeClient, spec: JoinSpec) -> HubEndpoint:
    """The HubEndpoint for a JoinSpec; SecretMissing / InvalidSecret say why not."""
    ref = f"{spec.namespace}/{spec.secret}"
    try:
        secret = await client.get(SECRETS, spec.secret, spec.namespace)
    except NotFound:
        raise SecretMissing(f"the member token Secret {ref} does not exist") from None
    return endpoint_from_secret(secret, spec.server, ref, spec.cluster_id)
