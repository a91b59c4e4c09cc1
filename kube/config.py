"""Where a client's server and credentials come from: kubeconfig, in-cluster, or a bearer token."""

from __future__ import annotations

import os
from pathlib import Path

from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config import ConfigException, load_incluster_config, load_kube_config

from kube.errors import KubeError

_SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and (_SERVICE_ACCOUNT_DIR / "token").exists()


async def load_configuration(kubeconfig: Path | None = None, context: str | None = None) -> Configuration:
    """Configuration from ``kubeconfig``; without one, in-cluster when running in a pod,
    else $KUBECONFIG or ~/.kube/config."""
    configuration = Configuration()
    if kubeconfig is None and _in_cluster():
        try:
            load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration,
                token_filename=str(_SERVICE_ACCOUNT_DIR / "token"),
                cert_filename=str(_SERVICE_ACCOUNT_DIR / "ca.crt"),
            )
        except ConfigException as err:
            raise KubeError(f"cannot load the in-cluster configuration: {err}") from err
        return configuration
    try:
        await load_kube_config(
            config_file=str(kubeconfig) if kubeconfig is not None else None,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except (ConfigException, OSError) as err:
        raise KubeError(f"cannot load kubeconfig {kubeconfig or '(default)'}: {err}") from err
    return configuration


def bearer_configuration(host: str, token: str, ca_file: Path | None = None, verify: bool = True) -> Configuration:
    """A Configuration for a server URL and a bearer token (kubernetes-asyncio ignores
    any api_key name other than BearerToken)."""
    configuration = Configuration(
        host=host.rstrip("/"), api_key={"BearerToken": token}, api_key_prefix={"BearerToken": "Bearer"}
    )
    if ca_file is not None:
        configuration.ssl_ca_cert = str(ca_file)
    configuration.verify_ssl = verify
    return configuration
