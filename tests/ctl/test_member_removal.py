"""`mcctl delete member CLUSTER_ID`: the operator's verb for a member that died without leaving.

It lists what goes (announce, exports, the imports they made, the hub tokens naming the
cluster), asks on a terminal, refuses without one unless `--yes`, removes the member through
the hub's REST facade and revokes its hub tokens (or, with `--keep-tokens`, says how to).
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import grpc
import pytest

from hub.app import HubApp
from mcapi import names
from tests.ctl.conftest import Mcctl
from tests.integration.hubclient import MemberFactory, service_export


@pytest.fixture
async def connect(hub: HubApp) -> AsyncIterator[MemberFactory]:
    factory = MemberFactory(hub)
    try:
        yield factory
    finally:
        await factory.close()


def hub_args(hub: HubApp, token: str | None = None) -> list[str]:
    assert hub.ca_cert is not None
    return ["--hub-url", hub.rest_url, "--token", token or hub.admin_token, "--hub-ca-file", str(hub.ca_cert)]


class Terminal(io.StringIO):
    """A stdin that is a terminal, with what the operator types."""

    def isatty(self) -> bool:
        return True


async def _west_with_exports(connect: MemberFactory) -> None:
    east, west = await connect("east"), await connect("west")
    await east.export(service_export("east", "default", "nginx"))
    await west.export(service_export("west", "default", "nginx"), service_export("west", "default", "only-west"))


async def test_delete_member_with_yes_lists_what_goes_removes_it_and_revokes_its_token(
    mcctl: Mcctl, hub: HubApp, connect: MemberFactory
) -> None:
    await _west_with_exports(connect)

    ran = await mcctl("delete", "member", "west", "--yes", *hub_args(hub))

    assert ran.code == 0, ran.err
    for listed in (
        names.member_announce_name("west"),
        names.service_export_name("west", "default", "nginx"),
        names.service_export_name("west", "default", "only-west"),
        names.service_import_name("default", "only-west"),
        names.service_import_name("default", "nginx"),
        "member-west",
    ):
        assert listed in ran.out, listed
    assert "revoked" in ran.out
    assert "west" not in hub.engine.index.members
    assert not hub.engine.index.owned_by("west", admin=False)
    assert [t.name for t in hub.tokens.list() if t.cluster_id == "west"] == []
    assert "east" in hub.engine.index.members


async def test_delete_member_without_a_terminal_and_without_yes_refuses_and_changes_nothing(
    mcctl: Mcctl, hub: HubApp, connect: MemberFactory
) -> None:
    await _west_with_exports(connect)
    revision = hub.engine.revision

    ran = await mcctl("delete", "member", "west", *hub_args(hub))

    assert ran.code == 2
    assert "--yes" in ran.err
    assert names.service_export_name("west", "default", "only-west") in ran.out  # it still says what would go
    assert hub.engine.revision == revision and "west" in hub.engine.index.members
    assert [t.name for t in hub.tokens.list() if t.cluster_id == "west"] == ["member-west"]


@pytest.mark.parametrize("typed", [("y\n", True), ("n\n", False), ("", False)], ids=["yes", "no", "nothing"])
async def test_delete_member_asks_on_a_terminal(
    mcctl: Mcctl, hub: HubApp, connect: MemberFactory, monkeypatch: pytest.MonkeyPatch, typed: tuple[str, bool]
) -> None:
    answer, removed = typed
    await _west_with_exports(connect)
    monkeypatch.setattr("sys.stdin", Terminal(answer))

    ran = await mcctl("delete", "member", "west", *hub_args(hub))

    assert "[y/N]" in ran.err
    assert ("west" not in hub.engine.index.members) is removed
    assert ran.code == (0 if removed else 1), ran.err


async def test_delete_member_keeping_its_tokens_says_how_to_revoke_them(
    mcctl: Mcctl, hub: HubApp, connect: MemberFactory
) -> None:
    await _west_with_exports(connect)

    ran = await mcctl("delete", "member", "west", "--yes", "--keep-tokens", *hub_args(hub))

    assert ran.code == 0, ran.err
    assert "mchub hub token delete member-west" in ran.out + ran.err
    assert [t.name for t in hub.tokens.list() if t.cluster_id == "west"] == ["member-west"]


async def test_delete_member_of_a_connected_member_warns_that_it_comes_back_with_a_valid_token(
    mcctl: Mcctl, hub: HubApp, connect: MemberFactory
) -> None:
    west = await connect("west")

    ran = await mcctl("delete", "member", "west", "--yes", "--keep-tokens", *hub_args(hub))

    assert ran.code == 0, ran.err
    assert "connected" in ran.err and "joins again" in ran.err
    await west.announce()  # kept token: it is admitted again at its next announce
    assert "west" in hub.engine.index.members


async def test_delete_member_refuses_unknown_members_and_member_tokens(
    mcctl: Mcctl, hub: HubApp, connect: MemberFactory
) -> None:
    east = await connect("east")
    unknown = await mcctl("delete", "member", "nobody", "--yes", *hub_args(hub))
    assert unknown.code == 3 and "nobody" in unknown.err
    refused = await mcctl("delete", "member", "east", "--yes", *hub_args(hub, east.token))
    assert refused.code == 1 and "admin" in refused.err
    assert "east" in hub.engine.index.members
    no_hub = await mcctl("delete", "member", "east", "--yes")
    assert no_hub.code == 2 and "--hub-url" in no_hub.err


async def test_a_member_whose_token_was_revoked_is_refused_with_a_reason(
    mcctl: Mcctl, hub: HubApp, connect: MemberFactory
) -> None:
    west = await connect("west")
    assert (await mcctl("delete", "member", "west", "--yes", *hub_args(hub))).code == 0
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await west.announce()
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "revoked" in (refused.value.details() or "")
