"""The images a ClusterSet on nodes runs, built here: nothing is pulled.

- ``mchub``: deploy/Dockerfile, by hack/build-image (``make image``), as
  docker.io/library/mchub:latest, the name a kubelet looks for when a Pod says
  ``image: mchub:latest``;
- ``web``: envtest's busybox test image (Debian's busybox-static): ``httpd`` serves the
  test Deployments, ``wget``/``nc`` make single requests;
- ``tools``: Debian's curl, wrk, iperf3, socat, BIND's nslookup and dig, OpenBSD's nc,
  dnsmasq and Python, named as the mcs-api conformance suite names its toolbox
  (``nicolaka/netshoot:v0.15``; no ENTRYPOINT, as there): request loops, load, DNS questions,
  the suite's ``request`` Pods and the test clusters' DNS (hack/nodeset/clusterdns.py);
- ``socat``: Debian's socat 1.7.4.4, named as the suite's server image
  (``alpine/socat:1.7.4.4``, ENTRYPOINT socat).

Names are stored fully qualified (``docker.io/...``): that is what a kubelet looks up for the
short names Pods use; an archive naming ``nicolaka/netshoot:v0.15`` imports, but its Pods fail
with ErrImagePull.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from hack.nodeset.clusters import REPO, envtest_dir

OUT_DIR = REPO / "build" / "image"
MCHUB_IMAGE = "mchub:latest"
WEB_IMAGE = "localhost/envtest/busybox:test"
TOOLS_IMAGE = "docker.io/nicolaka/netshoot:v0.15"
TOOLS_PACKAGES = (
    *("curl", "wrk", "iperf3", "socat", "bind9-dnsutils", "netcat-openbsd", "iproute2", "procps"),
    *("ca-certificates", "dnsmasq-base", "python3"),
)
SOCAT_IMAGE = "docker.io/alpine/socat:1.7.4.4"


@dataclass(frozen=True)
class Archives:
    mchub: Path
    web: Path
    tools: Path
    socat: Path

    def all(self) -> tuple[Path, ...]:
        return (self.mchub, self.web, self.tools, self.socat)


def _last_line(command: list[str], what: str, timeout: float = 1200) -> Path:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}): {done.stderr.strip()[-3000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def build_mchub() -> Path:
    return _last_line([str(REPO / "hack" / "build-image")], "make image")


# build-test-image checks each applet with ``printf ... | grep -q`` under pipefail: when grep
# finds the applet and exits while printf still writes the lines after it, printf dies of
# SIGPIPE and the script says the applet is missing. Seen about once in 150 builds on a busy
# machine (and once in CI); the busybox is the same on the next try, so a few tries suffice.
WEB_BUILD_TRIES = 4


def build_web() -> Path:
    scripts = envtest_dir()
    assert scripts is not None
    command = [str(scripts / "build-test-image"), str(OUT_DIR / "web.oci.tar")]
    for _ in range(WEB_BUILD_TRIES - 1):
        try:
            return _last_line(command, "build-test-image")
        except RuntimeError as failed:
            if "applet" not in str(failed):
                raise
    return _last_line(command, "build-test-image")


def _debian(ref: str, archive: str, packages: tuple[str, ...], *options: str) -> Path:
    command = [str(REPO / "hack" / "debian-image"), "--ref", ref, "--out", str(OUT_DIR / archive), *options]
    return _last_line([*command, *packages], ref)


def build_tools() -> Path:
    return _debian(TOOLS_IMAGE, "tools.oci.tar", TOOLS_PACKAGES, "--cmd", '["bash"]')


def build_socat() -> Path:
    return _debian(SOCAT_IMAGE, "socat.oci.tar", ("socat",), "--entrypoint", '["socat"]')


def build_all() -> Archives:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    return Archives(build_mchub(), build_web(), build_tools(), build_socat())
