"""ClusterSetJoinConfig (multicluster.antrea.io/v1alpha1): what a member needs to join,
printed by `init -j` and `get joinconfig`, read by `join -f`. Same shape as antctl's: the
config document, then optionally the member token Secret manifest as a second document.
For mchub, leaderAPIServer is the hub's gRPC URL (members talk to the hub, not to the
leader's API server)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from ctl.errors import UsageError
from ctl.output import to_yaml
from ctl.tokens import secret_manifest_text
from kube.resources import Obj

API_VERSION = "multicluster.antrea.io/v1alpha1"
KIND = "ClusterSetJoinConfig"

_OPTIONAL_FIELDS = """#clusterID: ""
#namespace: ""
# Use the pre-created token Secret.
#tokenSecretName: ""
# Create a token Secret with the manifest file.
#tokenSecretFile: ""
"""


@dataclass
class JoinConfig:
    """The fields are named as the YAML keys, as antctl spells them."""

    clusterSetID: str = ""
    clusterID: str = ""
    namespace: str = ""
    leaderClusterID: str = ""
    leaderNamespace: str = ""
    leaderAPIServer: str = ""
    tokenSecretName: str = ""
    tokenSecretFile: str = ""
    secret: Obj | None = None

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "secret" and (
                value or f.name in ("clusterSetID", "leaderClusterID", "leaderNamespace", "leaderAPIServer")
            ):
                doc[f.name] = value
        return doc


def render(config: JoinConfig) -> str:
    """The join config file: antctl's layout, unset optional fields commented out."""
    text = "---\n" + to_yaml(config.document())
    if not config.clusterID and not config.tokenSecretName:
        text += _OPTIONAL_FIELDS
    if config.secret is not None:
        text += secret_manifest_text(config.secret)
    return text


def parse(text: str, source: str) -> JoinConfig:
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise UsageError(f"{source} is not YAML: {exc}") from exc
    if not docs or not isinstance(docs[0], dict):
        raise UsageError(f"{source} holds no ClusterSetJoinConfig")
    head = docs[0]
    if head.get("apiVersion") != API_VERSION or head.get("kind") != KIND:
        raise UsageError(f"{source}: expected apiVersion {API_VERSION}, kind {KIND}")
    known = {f.name for f in fields(JoinConfig)} - {"secret"}
    config = JoinConfig()
    for key, value in head.items():
        if key in known and value is not None:
            setattr(config, key, str(value))
    if len(docs) > 1:
        config.secret = secret_document(docs[1], source)
    return config


def secret_document(doc: Any, source: str) -> Obj:
    if not isinstance(doc, dict) or doc.get("kind") != "Secret":
        raise UsageError(f"{source}: the second document must be the token Secret manifest")
    data = doc.get("data") or {}
    if not data.get("token"):
        raise UsageError(f"{source}: the token Secret has no data.token")
    return doc


def read_secret_file(path: Path) -> Obj:
    """A token Secret manifest file (as `create membertoken -o` writes it)."""
    text = read_text(path, "--token-secret-file")
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise UsageError(f"{path} is not YAML: {exc}") from exc
    secrets = [d for d in docs if isinstance(d, dict) and d.get("kind") == "Secret"]
    if not secrets:
        raise UsageError(f"{path} holds no Secret manifest")
    return secret_document(secrets[0], str(path))


def read_text(path: Path, flag: str) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read {flag} {path}: {exc.strerror}") from exc
