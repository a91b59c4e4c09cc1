"""The upstream mcs-api conformance suite, as published, against a ClusterSet on nodes.

``../shared/mcs-conformance/mcs-conformance.test.xz`` (kubernetes-sigs/mcs-api v0.5.0 plus the
commit that raises its Pod wait to 60 s), unpacked and checked against its SHA256SUMS, runs with
every member as a context (the first one exports), in a directory it keeps: ``report.yaml``,
``report.html``, ``junit.xml`` and the suite's log. ``python -m hack.nodeset.conformance DIR``
runs it against the ClusterSet ``python -m hack.nodeset up DIR`` left running, or starts one
(``make conformance``); with ``MCHUB_E2E_CLUSTERS`` against a user's clusters.
"""

from __future__ import annotations

import argparse
import hashlib
import lzma
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hack.nodeset.clusters import REPO, Cluster

SUITE_DIR = REPO.parent / "shared" / "mcs-conformance"
SUITE_ENV = "MCHUB_MCS_CONFORMANCE"
"""A directory holding mcs-conformance.test.xz and SHA256SUMS, instead of ../shared/mcs-conformance."""
ARTIFACTS = REPO / "test-artifacts" / "conformance"


def suite_archive() -> Path | None:
    directory = Path(os.environ.get(SUITE_ENV) or SUITE_DIR)
    archive = directory / "mcs-conformance.test.xz"
    return archive if archive.is_file() else None


def unpack(archive: Path, into: Path) -> Path:
    """The suite's binary, unpacked once and checked against the SHA256SUMS beside it."""
    sums = {}
    for line in (archive.parent / "SHA256SUMS").read_text().splitlines():
        digest, _, name = line.partition("  ")
        sums[name.strip().lstrip("*")] = digest
    if hashlib.sha256(archive.read_bytes()).hexdigest() != sums.get(archive.name):
        raise RuntimeError(f"{archive} does not match its SHA256SUMS")
    binary = into / "mcs-conformance.test"
    expected = sums.get(binary.name)
    if binary.exists() and (expected is None or hashlib.sha256(binary.read_bytes()).hexdigest() == expected):
        return binary
    into.mkdir(parents=True, exist_ok=True)
    data = lzma.decompress(archive.read_bytes())
    if expected is not None and hashlib.sha256(data).hexdigest() != expected:
        raise RuntimeError(f"{binary.name} unpacked from {archive} does not match its SHA256SUMS")
    binary.write_bytes(data)
    binary.chmod(0o755)
    return binary


@dataclass(frozen=True)
class Spec:
    group: str
    desc: str
    labels: tuple[str, ...]
    passed: bool
    skipped: bool
    message: str


@dataclass(frozen=True)
class Report:
    specs: tuple[Spec, ...]
    passed: int
    total: int
    suite_failure: str
    seconds: float
    exit_code: int
    directory: Path

    @property
    def all_passed(self) -> bool:
        return self.exit_code == 0 and not self.suite_failure and self.passed == self.total

    def table(self) -> str:
        """The README's table: spec, labels, result."""
        rows = ["| spec | labels | result |", "| --- | --- | --- |"]
        for spec in self.specs:
            result = "passed" if spec.passed else ("skipped" if spec.skipped else f"FAILED{spec.message}")
            labels = ", ".join((spec.group, *spec.labels))
            rows.append(f"| {spec.desc} | {labels} | {result} |")
        return "\n".join(rows)


def read_report(directory: Path, seconds: float, exit_code: int) -> Report:
    data: dict[str, Any] = yaml.safe_load((directory / "report.yaml").read_text()) or {}
    specs = tuple(
        Spec(
            group["name"],
            " ".join(str(test.get("desc", "")).split()),
            tuple(test.get("labels") or ()),
            bool(test.get("passed")),
            bool(test.get("skipped")),
            str(test.get("message") or ""),
        )
        for group in data.get("groups") or []
        for test in group.get("tests") or []
    )
    return Report(
        specs,
        int(data.get("passed", 0)),
        int(data.get("total", 0)),
        str(data.get("suitefailure") or ""),
        seconds,
        exit_code,
        directory,
    )


def run(clusters: list[Cluster], directory: Path = ARTIFACTS, *, extra: tuple[str, ...] = ()) -> Report:
    """Run the whole suite with ``clusters`` as its contexts (the first exports)."""
    archive = suite_archive()
    if archive is None:
        raise RuntimeError(f"no conformance suite: {SUITE_DIR} (or ${SUITE_ENV}) holds no mcs-conformance.test.xz")
    binary = unpack(archive, REPO / "build" / "conformance")
    directory.mkdir(parents=True, exist_ok=True)
    for stale in ("report.yaml", "report.html", "junit.xml"):
        (directory / stale).unlink(missing_ok=True)
    kubeconfig = ":".join(str(c.kubeconfig) for c in clusters)
    contexts = ",".join(c.kubectl.context or c.name for c in clusters)
    version = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True, text=True, check=False
    ).stdout.strip()
    command = [
        str(binary),
        f"--contexts={contexts}",
        "--project=mchub",
        f"--version={version or 'unknown'}",
        "--ginkgo.v",
        "--ginkgo.no-color",
        "--ginkgo.junit-report=junit.xml",
        "--ginkgo.timeout=40m",
        *extra,
    ]
    started = time.monotonic()
    with (directory / "suite.log").open("w") as log:
        done = subprocess.run(
            command,
            cwd=directory,
            env={**os.environ, "KUBECONFIG": kubeconfig},
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=45 * 60,
            check=False,
        )
    return read_report(directory, time.monotonic() - started, done.returncode)


def contexts(clusters: dict[str, Cluster], *, overlapping: bool) -> list[Cluster]:
    """The suite's contexts, the exporter first: east, or north when east and west share their
    ranges. The suite checks that every cluster's clusterset.local answers for a headless Service
    are the exporter's own Pod IPs; a globally addressed exporter's are its global addresses (its
    own IPs are the importer's own range), so the exporter is north, whose ranges are its own. The
    specs that export from the second context too (StrictPortConflict) export from east: their
    traffic to it goes through its global addresses."""
    order = ("north", "east", "west") if overlapping else ("east", "west", "north")
    return [clusters[name] for name in order if name in clusters]


def main(argv: list[str] | None = None) -> int:
    from hack.nodeset.clusterset import attach, start  # noqa: PLC0415 - the CLI only

    parser = argparse.ArgumentParser(prog="python -m hack.nodeset.conformance", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "dir", type=Path, help="a ClusterSet left running by `python -m hack.nodeset up DIR`, or where to start one"
    )
    parser.add_argument("--keep", action="store_true", help="leave a ClusterSet this command started running")
    parser.add_argument(
        "--plain",
        action="store_true",
        help="start the ClusterSet with every cluster's own ranges (python -m hack.nodeset up --plain)",
    )
    parser.add_argument("--label-filter", default="", help="only the specs ginkgo's label filter selects")
    parser.add_argument("--out", type=Path, default=ARTIFACTS, help=f"where the reports go (default {ARTIFACTS})")
    args = parser.parse_args(argv)
    directory = args.dir.resolve()
    started = not (directory / ".mchub-envtest").exists()
    clusterset = start(directory, overlap=not args.plain) if started else attach(directory)
    extra = (f"--ginkgo.label-filter={args.label_filter}",) if args.label_filter else ()
    try:
        members = contexts(clusterset.clusters, overlapping=clusterset.overlapping)
        report = run(members, args.out.resolve(), extra=extra)
    finally:
        if started and not args.keep:
            clusterset.down()
    print(report.table())
    print(f"\n{report.passed} of {report.total} specs passed in {report.seconds:.0f} s; {report.directory}")
    return 0 if report.all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
