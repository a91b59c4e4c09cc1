"""The SandboxServer itself: several in one loop, prompt shutdown, watch events encoded once, the
CLI entry point."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client, config

from kube.client import connect
from kube.resources import CONFIG_MAPS
from sandbox import cli, watch
from sandbox.server import SandboxServer


async def core_api(server: SandboxServer) -> client.ApiClient:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(server.kubeconfig_path), client_configuration=configuration)
    return client.ApiClient(configuration)


async def test_several_sandboxes_share_one_loop_without_sharing_objects(tmp_path: Path) -> None:
    servers = [SandboxServer(name, work_dir=tmp_path / name) for name in ("east", "west", "north")]
    await asyncio.gather(*(s.start() for s in servers))
    try:
        assert len({s.url for s in servers}) == 3
        apis = [await core_api(s) for s in servers]
        try:
            east, west = client.CoreV1Api(apis[0]), client.CoreV1Api(apis[1])
            await east.create_namespaced_config_map(
                "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="only-east"))
            )
            names = [c.metadata.name for c in (await west.list_namespaced_config_map("default")).items]
            assert "only-east" not in names
        finally:
            for api in apis:
                await api.close()
    finally:
        await asyncio.gather(*(s.stop() for s in servers))


async def test_the_kubeconfig_names_its_context_after_the_cluster(tmp_path: Path) -> None:
    server = SandboxServer("south", work_dir=tmp_path)
    await server.start()
    try:
        kubeconfig = yaml.safe_load(server.kubeconfig_path.read_text())
        assert kubeconfig["current-context"] == "south"
        assert kubeconfig["clusters"][0]["cluster"]["server"] == server.url
        assert kubeconfig["users"][0]["user"]["token"] == server.admin_token
        assert server.ca_path.read_text().startswith("-----BEGIN CERTIFICATE-----")
    finally:
        await server.stop()


async def test_stopping_ends_open_watches_promptly(tmp_path: Path) -> None:
    server = SandboxServer("watched", work_dir=tmp_path)
    await server.start()
    api = await core_api(server)
    try:
        # Not preloaded: the call returns the raw aiohttp response of the open watch stream.
        core: Any = client.CoreV1Api(api)
        response = await core.list_namespaced_config_map("default", watch=True, _preload_content=False)
        async with asyncio.timeout(5):
            await server.stop()
            while await response.content.readline():
                pass
    finally:
        await api.close()


async def test_an_event_is_encoded_once_for_every_plain_watch_of_it(tmp_path: Path, monkeypatch: Any) -> None:
    encoded: list[str] = []
    original = watch._encode

    def counting(event_type: str, obj: Any) -> bytes:
        encoded.append(f"{event_type} {obj['metadata']['name']}")
        return original(event_type, obj)

    monkeypatch.setattr(watch, "_encode", counting)
    server = SandboxServer("shared", work_dir=tmp_path)
    await server.start()
    kube = await connect(server.kubeconfig_path)
    try:
        listed = await kube.list(CONFIG_MAPS, "default")
        streams = [kube.watch(CONFIG_MAPS, "default", resource_version=listed.resource_version) for _ in range(3)]
        pending = [asyncio.ensure_future(anext(s)) for s in streams]
        await asyncio.sleep(0.2)  # the three watches are open
        await kube.create(CONFIG_MAPS, {"metadata": {"name": "once"}}, "default")
        async with asyncio.timeout(5):
            events = await asyncio.gather(*pending)
        assert {(e.type, e.object["metadata"]["name"]) for e in events} == {("ADDED", "once")}
        assert encoded == ["ADDED once"]
        for stream in streams:
            await stream.aclose()
    finally:
        await kube.close()
        await server.stop()


async def test_the_cli_runs_a_sandbox_until_cancelled(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(["--name", "cli", "--work-dir", str(tmp_path)])
    assert args.service_cidr == "10.96.0.0/12" and args.port == 0
    started = asyncio.Event()
    task = asyncio.create_task(cli.serve(args, lambda server: started.set()))
    async with asyncio.timeout(10):
        await started.wait()
    assert (tmp_path / "kubeconfig").exists()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
