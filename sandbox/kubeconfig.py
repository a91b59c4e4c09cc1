"""Writing the kubeconfig that points kubectl and clients at a sandbox."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml


def write_kubeconfig(path: Path, *, cluster: str, server: str, ca_pem: str, token: str) -> Path:
    """One cluster, one user (bearer token), one context; all named after the cluster."""
    user = f"{cluster}-admin"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem.encode()).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
        "current-context": cluster,
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
