"""When one exported Service passed each hop of its way to an importer's ServiceImport.

Off unless a process turns it on (``start``, as bench/propagation.py and the tests do): then each
hop of the path docs/architecture.md follows calls ``mark(hop, namespace, name, where)`` for the
Service's own export and import (``<ns>-<name>-service``; its Endpoints export takes the same
hops beside it), and the trace keeps the first time each (hop, where) was reached for that
Service. Off, a mark is a call that finds the switch off and returns, so the hops stay marked in the
product. ``where`` names the cluster a member hop happened in ("" on the hub): in one process
the exporter imports its own export too, and both members mark the import hops.

The clock is ``time.perf_counter`` (CLOCK_MONOTONIC on Linux), the one the benchmark starts its
own clock with, and the same for every process on the machine: a hub and members run as processes
of their own trace when ``MCHUB_TRACE_FILE`` names a file (``from_environment``), where each adds
its marks as it stops, and ``read`` joins the files into one trace. A trace keeps every mark in
memory until it stops (about a dozen per Service and cluster): it is for benchmarks and for
looking into one slow Service, not for a hub or member left tracing for weeks.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from mcapi.mchub.v1 import common_area_pb2 as pb


class Hop(StrEnum):
    """The hops, in the order one export passes them (the member's first, the hub's, the importer's)."""

    EXPORT_EVENT = "export_event"  # the exporter's informer delivered a ServiceExport event
    EXPORT_RECONCILED = "export_reconciled"  # its reconcile handed the export to the session
    EXPORT_SENT = "export_sent"  # the Export stream handed the upsert to gRPC
    HUB_RECEIVED = "hub_received"  # the hub's Export stream read it
    HUB_STAGED = "hub_staged"  # admitted, merged and staged in the store (not durable yet)
    HUB_DURABLE = "hub_durable"  # the store made it durable: its import is published on the bus
    WATCH_SENT = "watch_sent"  # the importer's WatchImports stream handed the import to gRPC
    IMPORT_RECEIVED = "import_received"  # the importer's session read it
    APPLY_STARTED = "apply_started"  # an import worker took it
    SERVICE_WRITTEN = "service_written"  # the imported Service (its ClusterIP) is written
    SERVICE_IMPORT_WRITTEN = "service_import_written"  # the ServiceImport is written


HOPS: tuple[Hop, ...] = tuple(Hop)
# Where each hop is marked: in the exporting member, on the hub (``where`` ""), or for the
# importing member (the rest; the hub's WatchImports stream marks with the watcher's cluster ID).
EXPORTER_HOPS = frozenset({Hop.EXPORT_EVENT, Hop.EXPORT_RECONCILED, Hop.EXPORT_SENT})
HUB_HOPS = frozenset({Hop.HUB_RECEIVED, Hop.HUB_STAGED, Hop.HUB_DURABLE})

Key = tuple[str, str]  # (namespace, name) of the Service
# A process started with this variable set traces, and adds its marks to that file as it stops.
FILE_ENV = "MCHUB_TRACE_FILE"


@dataclass
class Trace:
    """Every mark made while it was on: (namespace, name) -> (hop, where) -> first time."""

    marks: dict[Key, dict[tuple[Hop, str], float]] = field(default_factory=dict)

    def record(self, hop: Hop, key: Key, where: str) -> None:
        self.marks.setdefault(key, {}).setdefault((hop, where), time.perf_counter())

    def path(self, namespace: str, name: str, exporter: str, importer: str) -> dict[Hop, float]:
        """The times one Service passed each hop on its way from ``exporter`` to ``importer``
        (cluster IDs), in hop order; a hop not reached is missing."""
        marks = self.marks.get((namespace, name), {})
        path: dict[Hop, float] = {}
        for hop in HOPS:
            where = exporter if hop in EXPORTER_HOPS else "" if hop in HUB_HOPS else importer
            at = marks.get((hop, where))
            if at is not None:
                path[hop] = at
        return path

    def lines(self) -> Iterator[str]:
        """One JSON line per mark: [namespace, name, hop, where, time]."""
        for (namespace, name), marks in self.marks.items():
            for (hop, where), at in marks.items():
                yield json.dumps([namespace, name, hop.value, where, at])


class _Switch:
    """The trace marks go to (None: tracing is off)."""

    current: Trace | None = None


def start() -> Trace:
    """Turn tracing on in this process, with an empty trace."""
    _Switch.current = Trace()
    return _Switch.current


def stop() -> None:
    _Switch.current = None


def enabled() -> bool:
    return _Switch.current is not None


def mark(hop: Hop, namespace: str, name: str, where: str = "") -> None:
    """The Service ``namespace/name`` reached ``hop`` now (in cluster ``where``)."""
    trace = _Switch.current
    if trace is not None:
        trace.record(hop, (namespace, name), where)


def mark_export(hop: Hop, export: pb.ResourceExport, where: str = "") -> None:
    """``hop`` for an export, when it is a Service's own (its Endpoints take the hops beside it)."""
    trace = _Switch.current
    if trace is not None and export.WhichOneof("payload") == "service":
        trace.record(hop, (export.namespace, export.name), where)


def mark_import(hop: Hop, resource: pb.ResourceImport, where: str = "") -> None:
    """``hop`` for an import, when it is a ServiceImport's."""
    trace = _Switch.current
    if trace is not None and resource.WhichOneof("payload") == "service_import":
        trace.record(hop, (resource.namespace, resource.name), where)


def mark_imports(hop: Hop, resources: Iterable[pb.ResourceImport], where: str = "") -> None:
    if _Switch.current is not None:
        for resource in resources:
            mark_import(hop, resource, where)


def sent_imports(response: pb.WatchImportsResponse) -> Iterator[pb.ResourceImport]:
    """The imports a WatchImports message carries (one, or a batch's)."""
    if response.HasField("upsert"):
        yield response.upsert
    elif response.HasField("changes"):
        for change in response.changes.changes:
            if change.HasField("upsert"):
                yield change.upsert


def spans(path: Mapping[Hop, float], start: float, end: float) -> dict[str, float]:
    """Seconds from each hop reached to the next one reached, from ``start`` (named after the hop
    that ends the span; "created" is the bench's own start) to ``end`` ("seen")."""
    out: dict[str, float] = {}
    previous = start
    for hop, at in path.items():
        out[hop.value] = at - previous
        previous = at
    out["seen"] = end - previous
    return out


def read(paths: Iterable[Path]) -> Trace:
    """The marks of every file (as ``from_environment`` wrote them), the earliest of each hop."""
    joined = Trace()
    for path in paths:
        for line in path.read_text().splitlines():
            namespace, name, hop, where, at = json.loads(line)
            marks = joined.marks.setdefault((namespace, name), {})
            marks[(Hop(hop), where)] = min(at, marks.get((Hop(hop), where), at))
    return joined


@contextlib.contextmanager
def from_environment() -> Iterator[None]:
    """Trace while inside when ``MCHUB_TRACE_FILE`` is set, then add the marks to that file
    (a process restarted with the same file adds its own after them)."""
    path = os.environ.get(FILE_ENV)
    if not path:
        yield
        return
    traced = start()
    try:
        yield
    finally:
        stop()
        with Path(path).open("a") as out:
            out.writelines(line + "\n" for line in traced.lines())
