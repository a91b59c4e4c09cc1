"""ServiceAccount tokens while the leader's API server cannot review them.

A TokenReview that fails (the API server restarting, throttling) says nothing
about the token: the member must hear UNAVAILABLE (retry), not UNAUTHENTICATED
(which it reports as a bad token for the operator to fix), and the failure
must not be remembered as a verdict on the token.

Then real ServiceAccount tokens (whose Secrets the token controller fills, and bound
tokens of the TokenRequest API) reviewed by the leader cluster, a sandbox and a real
kube-apiserver.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import grpc
import pytest

from hub.app import HubApp
from hub.auth.identity import Identity
from hub.auth.tokenreview import TokenReviewAuthenticator
from kube.client import KubeClient
from kube.errors import ServerError
from kube.resources import SECRETS, SERVICE_ACCOUNTS, Resource
from mcapi import names
from tests.contract.leader_api import LeaderApi, leader_api
from tests.integration.hub_fixtures import hub_config, rest_session
from tests.integration.hubclient import Member

TOKEN = "sa-token-of-east"


class FlakyApiServer:
    """Answers TokenReviews for one ServiceAccount token, or fails while `down`."""

    down = False

    async def create(self, resource: Resource, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        if self.down:
            raise ServerError(503, "ServiceUnavailable", "the API server is restarting")
        known = obj["spec"]["token"] == TOKEN
        user = {"username": f"system:serviceaccount:{names.DEFAULT_LEADER_NAMESPACE}:east-sa"}
        return {"status": {"authenticated": known, "user": user if known else {}}}

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        if self.down:
            raise ServerError(503, "ServiceUnavailable", "the API server is restarting")
        return {"metadata": {"name": name, "annotations": {names.ANNOTATION_CLUSTER_ID: "east"}}}


@pytest.fixture
async def api() -> FlakyApiServer:
    return FlakyApiServer()


@pytest.fixture
async def hub(tmp_path: Path, api: FlakyApiServer) -> AsyncIterator[HubApp]:
    reviewer = TokenReviewAuthenticator(cast(KubeClient, api), names.DEFAULT_LEADER_NAMESPACE)
    app = HubApp(hub_config(tmp_path / "hub"), authenticator=reviewer)
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


async def test_a_failed_review_answers_unavailable_and_is_not_remembered(hub: HubApp, api: FlakyApiServer) -> None:
    east = Member(hub, "east", TOKEN)
    try:
        api.down = True
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await east.announce()
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE, info.value.details()
        api.down = False
        await east.announce()
        assert "east" in hub.engine.index.members
    finally:
        await east.close()


async def test_a_bad_token_is_still_unauthenticated(hub: HubApp) -> None:
    stranger = Member(hub, "east", "not-a-token")
    try:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stranger.announce()
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        await stranger.close()


async def test_a_failed_review_answers_rest_calls_with_503(hub: HubApp, api: FlakyApiServer) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with rest_session(hub) as http:
        api.down = True
        async with http.get("/api/v1/members", headers=headers) as response:
            assert response.status == 503, await response.text()
        api.down = False
        async with http.get("/api/v1/members", headers=headers) as response:
            assert response.status == 200, await response.text()


# ---- real ServiceAccount tokens, reviewed by the leader cluster ---------------------------------


@pytest.fixture
async def leader(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LeaderApi]:
    async with leader_api(cluster_kind, request, tmp_path / "leader") as api:
        yield api


async def test_tokens_the_token_controller_filled_speak_for_their_serviceaccounts_annotation(
    leader: LeaderApi,
) -> None:
    namespace, elsewhere = await leader.namespace("leader"), await leader.namespace("other")
    east = await leader.service_account_token(namespace, "member-east", "east")
    shared = await leader.service_account_token(namespace, "antrea-mc-member-access-sa", "*")
    plain = await leader.service_account_token(namespace, "not-a-member", None)
    outside = await leader.service_account_token(elsewhere, "member-east", "east")
    reviewer = TokenReviewAuthenticator(leader.client, namespace)

    assert await reviewer.authenticate(east) == Identity(cluster_id="east")
    assert await reviewer.authenticate(shared) == Identity(any_cluster=True)
    assert await reviewer.authenticate(plain) is None
    assert await reviewer.authenticate(outside) is None, "a ServiceAccount outside the leader Namespace"
    assert await reviewer.authenticate(east[:-4] + "AAAA") is None, "a token whose signature does not match"


async def test_a_bound_token_is_reviewed_and_a_revoked_members_tokens_are_refused_at_once(leader: LeaderApi) -> None:
    namespace = await leader.namespace("leader")
    legacy = await leader.service_account_token(namespace, "member-west", "west")
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}}
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/member-west/token"
    bound = str((await leader.client.request("POST", path, body=request))["status"]["token"])
    reviewer = TokenReviewAuthenticator(leader.client, namespace, cache_seconds=0)

    assert await reviewer.authenticate(bound) == Identity(cluster_id="west")
    assert await reviewer.authenticate(legacy) == Identity(cluster_id="west")
    # Revoking a member as `mcctl delete membertoken` does: the Secret and the ServiceAccount go.
    # (A real API server caches a successful token authentication for 10 s, so a deleted Secret's
    # token still passes TokenReview that long; the ServiceAccount the hub reads is gone at once.)
    await leader.client.delete(SECRETS, "member-west-token", namespace)
    await leader.client.delete(SERVICE_ACCOUNTS, "member-west", namespace)
    assert await reviewer.authenticate(legacy) is None
    assert await reviewer.authenticate(bound) is None
