"""How mcctl reaches things: a cluster's API server (kubeconfig) and the hub's REST facade."""

from __future__ import annotations

import asyncio
import json
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from ctl.errors import NotConnected, NotFoundError, OperationFailed, UsageError
from kube.backoff import Backoff
from kube.client import KubeClient, connect
from kube.errors import KubeError, parse_retry_after
from mcapi.addresses import is_loopback_host

ENV_HUB_URL = "MCHUB_HUB_URL"
ENV_TOKEN = "MCHUB_TOKEN"
ENV_HUB_CA = "MCHUB_HUB_CA"


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


def hub_ca_file(flag: Path | None) -> Path | None:
    """--hub-ca-file, else $MCHUB_HUB_CA: the CA that signed the hub's certificate (its data dir's tls/ca.crt)."""
    if flag is not None:
        return flag
    from_env = os.environ.get(ENV_HUB_CA, "")
    return Path(from_env) if from_env else None


@dataclass(frozen=True)
class HubAccess:
    url: str
    token: str
    # The CA to verify the hub's certificate with; None: the system's trust store.
    ca_file: Path | None = None

    def ssl_context(self) -> ssl.SSLContext | None:
        """Verification for an https:// hub (always on); None for a plaintext loopback hub."""
        if urlsplit(self.url).scheme == "http":
            return None
        try:
            return ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)
        except (OSError, ssl.SSLError) as exc:
            raise UsageError(f"cannot read --hub-ca-file {self.ca_file} as a PEM certificate: {exc}") from exc


def _check_hub_url(url: str) -> None:
    """https:// anywhere; http:// only to this machine (a hub run with --insecure), as the hub allows it."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise UsageError(f"--hub-url {url!r} must be the hub's REST URL, https://HOST:PORT")
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise UsageError(
            f"--hub-url {url!r} would send the bearer token in plaintext to another machine: "
            "the hub serves REST on https:// (plaintext only on loopback, with `mchub hub --insecure`)"
        )


def hub_access(
    hub_url: str | None, token: str | None, token_file: Path | None, *, required: bool, ca_file: Path | None = None
) -> HubAccess | None:
    """--hub-url/$MCHUB_HUB_URL, --token/--token-file/$MCHUB_TOKEN and --hub-ca-file/$MCHUB_HUB_CA,
    or None when no hub URL is given."""
    url = hub_url or os.environ.get(ENV_HUB_URL, "")
    if not url:
        if required:
            raise UsageError(f"this command reads the hub: pass --hub-url https://HOST:PORT or set ${ENV_HUB_URL}")
        return None
    _check_hub_url(url)
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
    access = HubAccess(url.rstrip("/"), token, hub_ca_file(ca_file))
    access.ssl_context()  # an unreadable CA file is a usage error now, not a connection failure later
    return access


# How long a call keeps asking a hub that answers 503 (an election takes a few seconds).
UNAVAILABLE_FOR = 10.0
_RETRY = Backoff(initial=0.2, maximum=2.0)


class HubConflict(OperationFailed):
    """The hub answered 409: the request conflicts with how it is set up (its message says how)."""


class HubRest:
    """Calls on the hub's REST facade (/api/v1/..., /metrics), with typed failures."""

    def __init__(self, access: HubAccess, timeout: float = 10.0, unavailable_for: float = UNAVAILABLE_FOR) -> None:
        self.access = access
        self.unavailable_for = unavailable_for
        tls = access.ssl_context()
        self._session = aiohttp.ClientSession(
            headers={"Authorization": f"Bearer {access.token}"},
            timeout=aiohttp.ClientTimeout(total=timeout),
            connector=aiohttp.TCPConnector(ssl=tls if tls is not None else True),
        )

    async def close(self) -> None:
        await self._session.close()

    async def __aenter__(self) -> HubRest:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def _get(self, path: str, params: dict[str, str] | None = None) -> aiohttp.ClientResponse:
        response = await self._send("GET", path, params)
        if response.status == 404:
            response.release()
            raise NotFoundError(f"the hub at {self.access.url} has no {path}")
        if response.status >= 300:
            body = await response.text()
            raise OperationFailed(f"GET {self.access.url}{path}: {response.status} {body.strip()[:300]}")
        return response

    async def _send(self, method: str, path: str, params: dict[str, str] | None) -> aiohttp.ClientResponse:
        """One call; a 503 (a replica between leaders, a store that failed for a moment: nothing was
        done) is asked again with backoff, never sooner than its Retry-After (the hub sends none
        today; a proxy in front of it may), for ``unavailable_for`` seconds. Past that, or at once
        when the wait asked for goes beyond it, OperationFailed with the hub's words."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.unavailable_for
        failures = 0
        while True:
            response = await self._send_once(method, path, params)
            if response.status != 503:
                return response
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            wait = max(retry_after or 0.0, _RETRY.delay(failures))
            if loop.time() + wait > deadline:
                # Only a wait longer than mcctl's whole bound is the hub's asking too much; one that
                # merely overruns what is left of it is the hub still being unavailable.
                too_long = retry_after is not None and retry_after > self.unavailable_for
                raise await self._unavailable(
                    response, f"{method} {self.access.url}{path}", retry_after if too_long else None
                )
            response.release()
            await asyncio.sleep(wait)
            failures += 1

    async def _unavailable(
        self, response: aiohttp.ClientResponse, call: str, too_long: float | None
    ) -> OperationFailed:
        """The error for a 503 given up on; ``too_long``: the Retry-After that goes past the bound."""
        text = await response.text()
        if too_long is not None:
            why = f"it asks to be asked again in {too_long:g} s, past the {self.unavailable_for:g} s mcctl waits"
        else:
            why = f"still unavailable; mcctl asks again for at most {self.unavailable_for:g} s"
        return OperationFailed(f"{call}: 503 {_hub_message(text) or text.strip()[:300]} ({why})")

    async def _send_once(self, method: str, path: str, params: dict[str, str] | None) -> aiohttp.ClientResponse:
        url = f"{self.access.url}{path}"
        try:
            response = await self._session.request(method, url, params={k: v for k, v in (params or {}).items() if v})
        except aiohttp.ClientConnectorCertificateError as exc:
            trusted = f"the CA in {self.access.ca_file}" if self.access.ca_file else "the system's trust store"
            raise NotConnected(
                f"the hub at {self.access.url} presented a certificate not trusted by {trusted} "
                f"({exc.certificate_error}): pass --hub-ca-file with the hub's CA (its data dir's tls/ca.crt) "
                f"or set ${ENV_HUB_CA}"
            ) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise NotConnected(
                f"cannot reach the hub at {self.access.url} ({exc!r}): is it running? check --hub-url"
            ) from exc
        if response.status == 401:
            response.release()
            raise OperationFailed(f"the hub at {self.access.url} refused the token: check --token or ${ENV_TOKEN}")
        return response

    async def write(self, method: str, path: str, params: dict[str, str] | None = None) -> Any:
        """A write (DELETE ...); the hub's JSON answer. Its refusals carry the hub's own message:
        404 raises NotFoundError, 409 HubConflict, anything else OperationFailed."""
        response = await self._send(method, path, params)
        text = await response.text()
        if response.status < 300:
            try:
                return json.loads(text)
            except ValueError:
                return {"message": text.strip()[:300]}
        detail = _hub_message(text) or f"{response.status} {response.reason}"
        if response.status == 404:
            raise NotFoundError(detail)
        if response.status == 409:
            raise HubConflict(detail)
        if response.status == 403:
            raise OperationFailed(f"the hub refused: {detail} (pass the admin token: the hub's data dir's admin.token)")
        raise OperationFailed(f"{method} {self.access.url}{path}: {response.status} {detail}")

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


def _hub_message(text: str) -> str:
    """The hub's words in an error body: its JSON ``message``, or the text itself when it is not
    JSON (a proxy's page), cut to 300 characters; "" for JSON without a message."""
    try:
        body = json.loads(text)
    except ValueError:
        return text.strip()[:300]
    return str(body.get("message") or "") if isinstance(body, dict) else ""
