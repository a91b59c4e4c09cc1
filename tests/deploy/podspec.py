"""Turning a rendered Deployment's container into the command line and environment a
kubelet would give it, so a test can run the process as the Pod would run it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.deploy.manifests import Obj, find

_VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


@dataclass(frozen=True)
class PodIdentity:
    """What the downward API would tell the container."""

    name: str
    namespace: str
    node_name: str = "node-1"


def container_env(objects: list[Obj], container: Obj, pod: PodIdentity) -> dict[str, str]:
    """The container's `env`, resolved: literal values, downward-API fields, ConfigMap keys."""
    fields = {"metadata.name": pod.name, "metadata.namespace": pod.namespace, "spec.nodeName": pod.node_name}
    env: dict[str, str] = {}
    for item in container.get("env") or []:
        if "value" in item:
            env[item["name"]] = expand(str(item["value"]), env)
            continue
        source = item["valueFrom"]
        if "fieldRef" in source:
            env[item["name"]] = fields[source["fieldRef"]["fieldPath"]]
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            env[item["name"]] = find(objects, "ConfigMap", ref["name"])["data"][ref["key"]]
        else:
            raise AssertionError(f"env {item['name']}: unsupported source {sorted(source)}")
    return env


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion in command and args: unknown references stay as written."""
    return _VAR_REF.sub(lambda m: env.get(m.group(1), m.group(0)), text)


def command_line(container: Obj, env: dict[str, str]) -> list[str]:
    return [expand(str(part), env) for part in [*(container.get("command") or []), *(container.get("args") or [])]]


def replace_flag_value(argv: list[str], flag: str, value: str) -> list[str]:
    """argv with the value of `--flag VALUE` (or `--flag=VALUE`) replaced; the flag must be there."""
    out = list(argv)
    for i, part in enumerate(out):
        if part == flag and i + 1 < len(out):
            out[i + 1] = value
            return out
        if part.startswith(flag + "="):
            out[i] = f"{flag}={value}"
            return out
    raise AssertionError(f"{flag} is not among the container's arguments")


def flag_value(argv: list[str], flag: str) -> str:
    for i, part in enumerate(argv):
        if part == flag and i + 1 < len(argv):
            return argv[i + 1]
        if part.startswith(flag + "="):
            return part.split("=", 1)[1]
    raise AssertionError(f"{flag} is not among the container's arguments")
