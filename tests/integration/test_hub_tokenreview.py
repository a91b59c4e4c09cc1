"""ServiceAccount tokens while the leader's API server cannot review them.

A TokenReview that fails (the API server restarting, throttling) says nothing
about the token: the member must hear UNAVAILABLE (retry), not UNAUTHENTICATED
(which it reports as a bad token for the operator to fix), and the failure
must not be remembered as a verdict on the token.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import aiohttp
import grpc
import pytest

from hub.app import HubApp
from hub.auth.tokenreview import TokenReviewAuthenticator
from kube.client import KubeClient
from kube.errors import ServerError
from kube.resources import Resource
from mcapi import names
from tests.integration.hub_fixtures import hub_config
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
    async with aiohttp.ClientSession(base_url=hub.rest_url) as http:
        api.down = True
        async with http.get("/api/v1/members", headers=headers) as response:
            assert response.status == 503, await response.text()
        api.down = False
        async with http.get("/api/v1/members", headers=headers) as response:
            assert response.status == 200, await response.text()
