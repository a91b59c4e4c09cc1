"""A handle on the API server under test: typed client plus raw HTTP for the rest."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client

from sandbox.server import SandboxServer

TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


@dataclass
class Response:
    status: int
    body: Any


@dataclass
class Cluster:
    kubeconfig: Path
    api: client.ApiClient
    configuration: client.Configuration
    sandbox: SandboxServer | None
    # Where the test may keep files of its own (kubectl's discovery cache).
    work_dir: Path
    _session: aiohttp.ClientSession | None = field(default=None, init=False)
    _anonymous_session: aiohttp.ClientSession | None = field(default=None, init=False)

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api)

    def _ssl(self, *, with_client_certificate: bool = True) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.configuration.ssl_ca_cert)
        if self.configuration.cert_file and with_client_certificate:
            context.load_cert_chain(self.configuration.cert_file, self.configuration.key_file)
        return context

    async def _headers(self, extra: dict[str, str] | None, *, credentials: bool = True) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        token = await self.configuration.get_api_key_with_prefix("BearerToken") if credentials else None
        if token:
            headers["Authorization"] = token if token.startswith("Bearer ") else f"Bearer {token}"
        return {**headers, **(extra or {})}

    def session(self, *, credentials: bool = True) -> aiohttp.ClientSession:
        """HTTP with the kubeconfig's credentials, or (credentials=False) with none at all."""
        if not credentials:
            if self._anonymous_session is None:
                context = self._ssl(with_client_certificate=False)
                self._anonymous_session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context))
            return self._anonymous_session
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self._ssl()))
        return self._session

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
        credentials: bool = True,
    ) -> Response:
        """One request; credentials=False sends neither the client certificate nor the token."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        all_headers = await self._headers(headers, credentials=credentials)
        if data is not None:
            all_headers["Content-Type"] = content_type
        async with self.session(credentials=credentials).request(
            method, str(self.configuration.host) + path, data=data, params=query, headers=all_headers
        ) as resp:
            text = await resp.text()
            try:
                parsed = json.loads(text) if text else None
            except ValueError:
                parsed = text
            return Response(resp.status, parsed)

    async def watch(
        self, path: str, query: dict[str, str], headers: dict[str, str] | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """Yield watch events (as dicts) until the server ends the stream."""
        async with self.session().get(
            str(self.configuration.host) + path,
            params={**query, "watch": "true"},
            headers=await self._headers(headers),
        ) as resp:
            assert resp.status == 200, await resp.text()
            while True:
                line = await resp.content.readline()
                if not line:
                    return
                yield json.loads(line)

    async def wait_deleted(self, path: str, name: str, within: float = 15) -> None:
        """Return once the object at path/name is gone, following a watch rather than polling."""
        async with asyncio.timeout(within):
            while True:
                found = await self.request("GET", f"{path}/{name}")
                if found.status == 404:
                    return
                query = {
                    "fieldSelector": f"metadata.name={name}",
                    "resourceVersion": found.body["metadata"]["resourceVersion"],
                    "timeoutSeconds": str(int(within)),
                }
                async for event in self.watch(path, query):
                    if event["type"] == "DELETED":
                        return

    async def close(self) -> None:
        for session in (self._session, self._anonymous_session):
            if session is not None:
                await session.close()
        await self.api.close()
