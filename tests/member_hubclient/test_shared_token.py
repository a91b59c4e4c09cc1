"""A token shared by several members (Antrea's default member token) works when the
session names its cluster: the hub treats each caller as the cluster it names."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hub.app import HubApp
from hub.auth.identity import Identity
from member.hubclient import HubEndpoint, HubSession
from tests.integration.hub_fixtures import hub_config
from tests.member_hubclient.conftest import SESSION_CONFIG

SHARED = "shared-member-token"


class SharedTokenAuthenticator:
    """Stands in for TokenReview of a ServiceAccount annotated cluster-id: "*"."""

    async def authenticate(self, token: str) -> Identity | None:
        return Identity(any_cluster=True) if token == SHARED else None


async def test_two_members_share_one_token_and_each_speaks_for_its_own_cluster(tmp_path: Path) -> None:
    hub = HubApp(hub_config(tmp_path / "hub", leader_cluster_id="leader"), authenticator=SharedTokenAuthenticator())
    await hub.start()
    sessions = []
    try:
        assert hub.ca_cert is not None
        for cluster in ("east", "west"):
            endpoint = HubEndpoint(hub.grpc_target, SHARED, hub.ca_cert.read_bytes(), cluster_id=cluster)
            session = HubSession(endpoint, replace(SESSION_CONFIG, cluster_id=cluster))
            await session.start()
            sessions.append(session)
            await session.wait_for_state(lambda state: state.connected)
        assert set(hub.engine.index.members) == {"east", "west"}
    finally:
        for session in sessions:
            await session.stop()
        await hub.stop()
