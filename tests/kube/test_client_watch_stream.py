"""KubeClient.watch reads the stream as it arrives: several events in one read, one event over
many reads, blank lines, and a last event the server ended without a newline."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration

from kube import client as client_module
from kube.client import KubeClient, WatchEvent
from kube.errors import ConnectionFailed
from kube.resources import CONFIG_MAPS
from tests.loopback_http import Handler, serving


def _event(event_type: str, name: str, padding: int = 0) -> bytes:
    obj = {"metadata": {"name": name, "resourceVersion": "1"}, "data": {"pad": "x" * padding}}
    return json.dumps({"type": event_type, "object": obj}).encode()


def _answering_with(chunks: Sequence[bytes]) -> Handler:
    """A watch answered with ``chunks``, each written (and flushed) on its own, then ended."""

    async def handle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for chunk in chunks:
            await response.write(chunk)
            await asyncio.sleep(0.01)  # each its own read on the client's side
        await response.write_eof()
        return response

    return handle


async def _watched(chunks: Sequence[bytes]) -> list[WatchEvent]:
    async with serving(_answering_with(chunks)) as url:
        kube = KubeClient.from_configuration(Configuration(host=url))
        try:
            return [event async for event in kube.watch(CONFIG_MAPS, "default", resource_version="1")]
        finally:
            await kube.close()


def _names(events: list[WatchEvent]) -> list[tuple[str, str]]:
    return [(e.type, e.object["metadata"]["name"]) for e in events]


async def test_several_events_in_one_read_are_each_delivered() -> None:
    burst = b"\n".join(_event("ADDED", f"cm-{i}") for i in range(5)) + b"\n"
    assert _names(await _watched([burst])) == [("ADDED", f"cm-{i}") for i in range(5)]


async def test_an_event_split_over_many_reads_is_delivered_whole_with_what_shares_its_reads() -> None:
    big = _event("MODIFIED", "big", padding=300_000)
    stream = _event("ADDED", "before") + b"\n" + big + b"\n" + _event("DELETED", "after") + b"\n"
    pieces = [stream[i : i + 7_000] for i in range(0, len(stream), 7_000)]
    events = await _watched(pieces)
    assert _names(events) == [("ADDED", "before"), ("MODIFIED", "big"), ("DELETED", "after")]
    assert len(events[1].object["data"]["pad"]) == 300_000


async def test_blank_lines_are_skipped_and_a_last_event_without_a_newline_is_delivered() -> None:
    chunks = [b"\n", _event("ADDED", "a") + b"\n\n", b"  \n", _event("ADDED", "b")]
    assert _names(await _watched(chunks)) == [("ADDED", "a"), ("ADDED", "b")]


async def test_a_line_longer_than_any_event_fails_the_watch_instead_of_growing_without_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client_module, "MAX_WATCH_EVENT_BYTES", 50_000)
    endless = [b"x" * 20_000 for _ in range(5)]
    with pytest.raises(ConnectionFailed, match="longer than 50000 bytes"):
        await _watched([_event("ADDED", "a") + b"\n", *endless])


@pytest.mark.parametrize("garbage", [b"{not json}\n", b'{"type": "ADDED"}\n'])
async def test_an_undecodable_event_fails_the_watch_as_a_connection_failure(garbage: bytes) -> None:
    with pytest.raises(ConnectionFailed):
        await _watched([_event("ADDED", "a") + b"\n", garbage])
