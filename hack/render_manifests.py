"""Render deploy/config's kustomizations into the single-file manifests of deploy/build.

python hack/render_manifests.py           # (re)write deploy/build/*.yml
python hack/render_manifests.py --check   # exit 1 when a file in deploy/build is stale

kustomize (as `kubectl kustomize`, no API server needed) does the composing; the
result is then re-serialized here in a fixed object order and YAML style, so the
output does not move with the kustomize version that happens to be installed.
The kubectl binary is $KUBECTL, else `kubectl` on PATH.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT / "deploy" / "config"
BUILD_DIR = ROOT / "deploy" / "build"


@dataclass(frozen=True)
class Manifest:
    overlay: str
    """Directory under deploy/config."""
    file_name: str
    """File under deploy/build."""
    summary: str


MANIFESTS = (
    Manifest(
        "leader",
        "antrea-multicluster-leader.yml",
        "The leader hub in Namespace antrea-multicluster (the Namespace, CRDs, RBAC, hub, member access).",
    ),
    Manifest(
        "leader-tls",
        "antrea-multicluster-leader-tls.yml",
        "The leader hub in Namespace antrea-multicluster serving Secret mchub-hub-tls (create it first).",
    ),
    Manifest(
        "leader-namespaced",
        "antrea-multicluster-leader-namespaced.yml",
        "The leader hub for a Namespace you created: sed 's/antrea-multicluster/<ns>/g' this file | kubectl apply -f -",
    ),
    Manifest(
        "member",
        "antrea-multicluster-member.yml",
        "The member controller in kube-system (CRDs, RBAC, ConfigMap antrea-mc-controller-config, Deployment).",
    ),
    Manifest(
        "hub-nodeport",
        "mchub-hub-nodeport.yml",
        "The hub's gRPC port on every leader Node (30051), without a LoadBalancer: kubectl apply -n <ns> -f this file",
    ),
    Manifest(
        "agent",
        "mchub-agent.yml",
        "The per-Node datapath agent (DaemonSet) in kube-system; apply after the member manifest.",
    ),
)

# Objects a later one depends on come first (Helm's install order, for the kinds used):
# the Namespace before what lives in it, CRDs before anyone uses them, a ServiceAccount
# before its token Secret, RBAC and configuration before the workloads.
KIND_ORDER = (
    "Namespace",
    "CustomResourceDefinition",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "DaemonSet",
    "Deployment",
)


class RenderError(RuntimeError):
    """kubectl is missing or kustomize refused a kustomization."""


def kubectl_binary() -> str:
    binary = os.environ.get("KUBECTL") or shutil.which("kubectl")
    if not binary:
        raise RenderError("kubectl not found (set KUBECTL or put kubectl on PATH); it renders the kustomizations")
    return binary


def kustomize(overlay_dir: Path) -> list[dict[str, Any]]:
    """The objects `kubectl kustomize` builds from one overlay."""
    # The CRDs are generated into deploy/crds, outside every kustomization root.
    command = [kubectl_binary(), "kustomize", "--load-restrictor", "LoadRestrictionsNone", str(overlay_dir)]
    # No API server is involved; an unreachable KUBECONFIG must not matter.
    env = {**os.environ, "KUBECONFIG": os.devnull}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RenderError(f"kubectl kustomize {overlay_dir} failed: {done.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def _sort_key(obj: dict[str, Any]) -> tuple[int, str, str]:
    kind = str(obj.get("kind", ""))
    rank = KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
    meta = obj.get("metadata") or {}
    return rank, str(meta.get("namespace", "")), str(meta.get("name", ""))


class _ManifestDumper(yaml.SafeDumper):
    """Block literals for multi-line strings, so embedded configuration stays readable."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ManifestDumper.add_representer(str, _represent_str)


def _conventional_order(obj: dict[str, Any]) -> dict[str, Any]:
    """apiVersion, kind, metadata first, as people write manifests; the rest as kustomize left it."""
    head = {key: obj[key] for key in ("apiVersion", "kind", "metadata") if key in obj}
    return head | {key: value for key, value in obj.items() if key not in head}


def render(manifest: Manifest) -> str:
    objects = [_conventional_order(obj) for obj in sorted(kustomize(CONFIG_DIR / manifest.overlay), key=_sort_key)]
    header = (
        f"# Generated by hack/render_manifests.py from deploy/config/{manifest.overlay}. Do not edit.\n"
        f"# {manifest.summary}\n"
    )
    body = "".join(
        "---\n" + yaml.dump(obj, Dumper=_ManifestDumper, sort_keys=False, default_flow_style=False, width=120)
        for obj in objects
    )
    return header + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when deploy/build is not up to date")
    parser.add_argument("--out", type=Path, default=BUILD_DIR, help="output directory (default: deploy/build)")
    args = parser.parse_args(argv)
    try:
        rendered = {manifest.file_name: render(manifest) for manifest in MANIFESTS}
    except RenderError as exc:
        print(f"render_manifests: {exc}", file=sys.stderr)
        return 2
    if args.check:
        stale = [name for name, text in rendered.items() if _read(args.out / name) != text]
        for name in stale:
            print(f"stale: {args.out / name}", file=sys.stderr)
        if stale:
            print("run: python hack/render_manifests.py", file=sys.stderr)
            return 1
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in rendered.items():
        (args.out / name).write_text(text)
        print(f"wrote {args.out / name}")
    return 0


def _read(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


if __name__ == "__main__":
    sys.exit(main())
