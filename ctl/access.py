"""How mcctl reaches things: a cluster's API server (kubeconfig) and the hub's REST facade."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from ctl.errors import NotConnected, NotFoundError, OperationFailed, UsageError
from kube.client import KubeClient, connect
from kube.errors import KubeError

ENV_HUB_URL = "MCHUB_HUB_URL"
ENV_TOKEN = "MCHUB_TOKEN"


def check_kubeconfig(kubeconfig: Path | None) -> None:
    if kubeconfig is not None and not kubeconfig.is_file():
        raise UsageError(f"kubeconfig {kubeconfig} does not exist: pass --kubeconfig PATH to a readable file")


async def open_cluster(kubeconfig: Path | None) -> KubeClient:
    """A client for the cluster `--kubeconfig` (or $KUBECONFIG, ~/.kube/config, in-cluster) names."""
    check_kubeconfig(kubeconfig)
    try:
        return await connect(kubeconfig)
    except KubeError as exc:
        raise NotConnected(f"{exc}: pass --kubeconfig PATH or set $KUBECONFIG") from exc


@dataclass(frozen=True)
class HubAccess:
    url: str
    token: str


def hub_access(hub_url: str | None, token: str | None, token_file: Path | None, *, required: bool) -> HubAccess | None:
    """--hub-url/$MCHUB_HUB_URL and --token/--token-file/$MCHUB_TOKEN, or None when no hub URL is given."""
    url = hub_url or os.environ.get(ENV_HUB_URL, "")
    if not url:
        if required:
            raise UsageError(f"this command reads the hub: pass --hub-url http://HOST:PORT or set ${ENV_HUB_URL}")
        return None
    if token is None and token_file is not None:
        try:
            token = token_file.read_text().strip()
        except OSError as exc:
            raise UsageError(f"cannot read --token-file {token_file}: {exc.strerror}") from exc
    token = token or os.environ.get(ENV_TOKEN, "")
    if not token:
        raise UsageError(
            "the hub needs a bearer token: pass --token, --token-file (e.g. mchub-data/admin.token) "
            f"or set ${ENV_TOKEN}"
        )
    return HubAccess(url.rstrip("/"), token)


class HubRest:
    """GET calls on the hub's REST facade (/api/v1/..., /metrics), with typed failures."""

    def __init__(self, access: HubAccess, timeout: float = 10.0) -> None:
        self.access = access
        self._session = aiohttp.ClientSession(
            headers={"Authorization": f"Bearer {access.token}"}, timeout=aiohttp.ClientTimeout(total=timeout)
        )

    async def close(self) -> None:
        await self._session.close()

    async def __aenter__(self) -> HubRest:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def _get(self, path: str, params: dict[str, str] | None = None) -> aiohttp.ClientResponse:
        url = f"{self.access.url}{path}"
        try:
            response = await self._session.get(url, params={k: v for k, v in (params or {}).items() if v})
        except (aiohttp.ClientError, OSError) as exc:
            raise NotConnected(
                f"cannot reach the hub at {self.access.url} ({exc!r}): is it running? check --hub-url"
            ) from exc
        if response.status == 401:
            response.release()
            raise OperationFailed(f"the hub at {self.access.url} refused the token: check --token or ${ENV_TOKEN}")
        if response.status == 404:
            response.release()
            raise NotFoundError(f"the hub at {self.access.url} has no {path}")
        if response.status >= 300:
            body = await response.text()
            raise OperationFailed(f"GET {url}: {response.status} {body.strip()[:300]}")
        return response

    async def json(self, path: str, params: dict[str, str] | None = None) -> Any:
        response = await self._get(path, params)
        try:
            return await response.json()
        except (aiohttp.ContentTypeError, ValueError) as exc:
            raise OperationFailed(f"GET {path}: the hub did not answer JSON") from exc

    async def text(self, path: str) -> str:
        response = await self._get(path)
        return await response.text()

    async def items(self, path: str, params: dict[str, str] | None = None) -> list[dict[str, Any]]:
        body = await self.json(path, params)
        items = body.get("items") if isinstance(body, dict) else None
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
