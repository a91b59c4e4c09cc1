"""ServiceAccount tokens: TokenRequest, TokenReview, and token Secrets filled by the controller."""

from __future__ import annotations

import asyncio
import base64

from kubernetes_asyncio import client

from tests.sandbox.cluster import Cluster


async def review(cluster: Cluster, token: str) -> client.V1TokenReviewStatus:
    api = client.AuthenticationV1Api(cluster.api)
    reviewed = await api.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token)))
    return reviewed.status


async def test_a_requested_token_authenticates_as_its_service_account(cluster: Cluster, namespace: str) -> None:
    core = cluster.core
    await core.create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="member-east"))
    )
    issued = await core.create_namespaced_service_account_token(
        "member-east", namespace, client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
    )
    assert issued.status.token
    status = await review(cluster, issued.status.token)
    assert status.authenticated is True
    assert status.user.username == f"system:serviceaccount:{namespace}:member-east"
    assert f"system:serviceaccounts:{namespace}" in status.user.groups


async def test_a_token_that_was_never_issued_does_not_authenticate(cluster: Cluster) -> None:
    status = await review(cluster, "eyJhbGciOiJIUzI1NiJ9.e30.bm90LWEtc2lnbmF0dXJl")
    assert not status.authenticated


async def test_a_token_secret_gets_its_token_and_ca_filled_in(cluster: Cluster, namespace: str) -> None:
    core = cluster.core
    await core.create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="member-west"))
    )
    secret = client.V1Secret(
        metadata=client.V1ObjectMeta(
            name="member-west-token", annotations={"kubernetes.io/service-account.name": "member-west"}
        ),
        type="kubernetes.io/service-account-token",
    )
    created = await core.create_namespaced_secret(namespace, secret)
    filled = created
    query = {
        "fieldSelector": "metadata.name=member-west-token",
        "resourceVersion": created.metadata.resource_version,
        "timeoutSeconds": "20",
    }
    async with asyncio.timeout(20):
        async for event in cluster.watch(f"/api/v1/namespaces/{namespace}/secrets", query):
            if (event["object"].get("data") or {}).get("token"):
                filled = await core.read_namespaced_secret("member-west-token", namespace)
                break
    assert filled.data and {"token", "ca.crt"} <= set(filled.data)
    token = base64.b64decode(filled.data["token"]).decode()
    status = await review(cluster, token)
    assert status.authenticated is True
    assert status.user.username == f"system:serviceaccount:{namespace}:member-west"


async def test_a_requested_token_can_call_the_api(cluster: Cluster, namespace: str) -> None:
    core = cluster.core
    await core.create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="caller"))
    )
    issued = await core.create_namespaced_service_account_token(
        "caller", namespace, client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
    )
    reply = await cluster.request("GET", "/api", headers={"Authorization": f"Bearer {issued.status.token}"})
    assert reply.status == 200
