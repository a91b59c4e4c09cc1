"""Writes every Service's ClusterIP as ``<name>.<ns>.svc.<domain>`` into a hosts file, again
whenever the Services change (a sidecar of the test clusters' DNS: dnsmasq reads the file).

Standard library only, in-cluster: the Pod's ServiceAccount token and CA, a list, then a watch
from its resourceVersion (relisting when the watch ends or fails). Run as
``python3 service_hosts.py HOSTS_FILE [CLUSTER_DOMAIN]``.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.request
from typing import Any

SA = "/var/run/secrets/kubernetes.io/serviceaccount"


def request(path: str, timeout: float) -> Any:
    host = os.environ["KUBERNETES_SERVICE_HOST"]
    port = os.environ["KUBERNETES_SERVICE_PORT"]
    with open(f"{SA}/token") as token:
        headers = {"Authorization": f"Bearer {token.read().strip()}"}
    context = ssl.create_default_context(cafile=f"{SA}/ca.crt")
    req = urllib.request.Request(f"https://{host}:{port}{path}", headers=headers)
    return urllib.request.urlopen(req, timeout=timeout, context=context)


def write(path: str, services: dict[tuple[str, str], str], domain: str) -> None:
    lines = sorted(f"{ip} {name}.{ns}.svc.{domain}\n" for (ns, name), ip in services.items())
    with open(path + ".tmp", "w") as out:
        out.writelines(lines)
    os.replace(path + ".tmp", path)


def cluster_ip(service: dict[str, Any]) -> str | None:
    ip = service.get("spec", {}).get("clusterIP")
    return ip if ip and ip != "None" else None


def run(path: str, domain: str) -> None:
    while True:
        try:
            with request("/api/v1/services", 30) as answer:
                listed = json.load(answer)
            services = {
                (s["metadata"]["namespace"], s["metadata"]["name"]): ip
                for s in listed["items"]
                if (ip := cluster_ip(s))
            }
            write(path, services, domain)
            version = listed["metadata"]["resourceVersion"]
            with request(f"/api/v1/services?watch=1&resourceVersion={version}&timeoutSeconds=300", 330) as stream:
                for line in stream:
                    event = json.loads(line)
                    if event["type"] not in ("ADDED", "MODIFIED", "DELETED"):
                        continue
                    meta = event["object"]["metadata"]
                    key = (meta["namespace"], meta["name"])
                    ip = cluster_ip(event["object"])
                    if event["type"] == "DELETED" or ip is None:
                        services.pop(key, None)
                    else:
                        services[key] = ip
                    write(path, services, domain)
        except Exception as err:  # the API server restarted or the watch expired: list again
            print(f"service_hosts: {err}", file=sys.stderr, flush=True)
            time.sleep(1)


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "cluster.local")
