"""The hub's own work per delivery on the batched WatchImports path, without the transport.

M watchers subscribe to one bus; commits of C imports each are published K at a time, and each
watcher takes what it holds (as WatchImportsStream does: one item, then what is ready) and
answers it; every message is serialized as grpc's serializer for WatchImports does. Prints the
CPU per delivery, the messages and bytes per delivery, and how many changes were encoded per
delivery. The imports are the hub's own for bench/hub_scale.py's Services.

Usage: python bench/watch_encoding.py [--watchers 1000] [--changes 5] [--commits-a-message 4] [--commits 400]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time

from hub_fanout import endpoints_export, import_events, service_export

from hub.grpc.watch_stream import WatchImportsStream, _Sent
from hub.metrics import HubMetrics
from hub.store.base import ImportChange
from hub.watch import batches as watch_batches
from hub.watch.batches import ImportBatch
from hub.watch.bus import Bus
from hub.watch.encoded import serialize
from mcapi.mchub.v1 import common_area_pb2 as pb

EPOCH = "0123456789abcdef0123456789abcdef"


class _Epoch:
    """What a stream asks its engine while it answers commits: the epoch."""

    epoch = EPOCH


def commits(changes: int, count: int) -> list[ImportBatch]:
    services = changes * count // 2 + 1
    exports = [e for i in range(services) for e in (endpoints_export("e00", i), service_export("e00", i))]
    imports = [pb.WatchImportsResponse.FromString(m).upsert for m in import_events(exports)]
    return [
        ImportBatch(r + 1, [ImportChange(r + 1, i.import_name, i) for i in imports[r * changes : (r + 1) * changes]])
        for r in range(count)
    ]


async def run(args: argparse.Namespace) -> str:
    published = commits(args.changes, args.commits)
    encoded = 0
    entry = watch_batches.change_entry

    def counted(change: pb.ImportChange) -> bytes:
        nonlocal encoded
        encoded += 1
        return entry(change)

    watch_batches.change_entry = counted  # type: ignore[assignment]
    bus: Bus[ImportBatch] = Bus(10**9, lambda batch: len(batch.changes) or 1)
    metrics, engine = HubMetrics(), _Epoch()
    streams = [
        WatchImportsStream(
            engine,  # type: ignore[arg-type]
            pb.WatchImportsRequest(cluster_id=f"w{n:04d}", batched=True),
            f"w{n:04d}",
            metrics,
            4 * 1024 * 1024,
        )
        for n in range(args.watchers)
    ]
    messages = size = 0
    with contextlib.ExitStack() as stack:
        subscriptions = [stack.enter_context(bus.subscribe()) for _ in streams]
        sent = [_Sent(0) for _ in streams]
        cpu = time.process_time()
        for first in range(0, len(published), args.commits_a_message):
            for batch in published[first : first + args.commits_a_message]:
                bus.publish(batch)
            for stream, subscription, where in zip(streams, subscriptions, sent, strict=True):
                items = [await subscription.get(), *subscription.ready(watch_batches.MAX_BATCH_CHANGES)]
                for response in stream._answer(items, where):
                    messages += 1
                    size += len(serialize(response))
        cpu = time.process_time() - cpu
    deliveries = args.watchers * args.changes * args.commits
    return (
        f"{deliveries:,} deliveries to {args.watchers} watchers, {args.changes} imports a commit, "
        f"{args.commits_a_message} commits a message: {1e6 * cpu / deliveries:.3f} us CPU, "
        f"{messages / deliveries:.4f} messages, {size / deliveries:.1f} bytes, "
        f"{encoded / deliveries:.4f} changes encoded per delivery"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=5, help="imports a commit")
    parser.add_argument("--commits-a-message", type=int, default=4, help="commits a watcher takes at a time")
    parser.add_argument("--commits", type=int, default=400)
    print(asyncio.run(run(parser.parse_args())))
