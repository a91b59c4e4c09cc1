"""Publishing what commits changed to the open watches (the engine publishes, the wire serves).

bus: fan-out to every subscriber, bounded per subscriber; batches: what one commit changed in
imports (ImportBatch) and how a watch's changes become WatchImportsResponse messages;
encoded: those messages as bytes, each change encoded once for every watcher that sees it
alike; delivery (mcapi.delivery): which member receives an import.
"""
