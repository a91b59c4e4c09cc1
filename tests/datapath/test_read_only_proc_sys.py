"""A read-only /proc/sys, as a container runtime mounts it in every unprivileged container,
makes sysctl writes fail with an error that tells the operator what the agent needs."""

from __future__ import annotations

import json
import sys

from tests.datapath.topology import sh

# Runs in a mount and network namespace of its own, where /proc/sys is a read-only bind mount
# (what runc does), so neither the machine's mounts nor its sysctls are touched.
_READ_ONLY = 'mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys && exec "$0" -c "$1"'
_WRITE = """
import json
from agent.errors import SysctlError
from agent.linux.netns import write_sysctl

key = "net/ipv4/conf/lo/forwarding"
before = open("/proc/sys/" + key).read().strip()
try:
    write_sysctl(None, key, "0" if before == "1" else "1")
    print(json.dumps({"error": None}))
except SysctlError as err:
    after = open("/proc/sys/" + key).read().strip()
    print(json.dumps({"error": str(err), "temporary": err.temporary, "unchanged": before == after}))
"""


async def test_a_read_only_proc_sys_is_a_permanent_error_asking_for_a_privileged_container() -> None:
    out = await sh("unshare", "--mount", "--net", "--", "sh", "-c", _READ_ONLY, sys.executable, _WRITE)
    result = json.loads(out)
    assert result["error"] is not None, "the write succeeded: /proc/sys was not read-only"
    assert result["error"].startswith("cannot set /proc/sys/net/ipv4/conf/lo/forwarding to ")
    assert "(EROFS: Read-only file system): the agent needs a writable /proc/sys" in result["error"]
    assert "privileged container (securityContext.privileged: true)" in result["error"]
    assert result["temporary"] is False
    assert result["unchanged"] is True
