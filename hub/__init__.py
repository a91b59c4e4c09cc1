"""The leader hub: members export to it over gRPC, it merges their exports into imports, and
every member watches the imports meant for it.

The path of an export, package by package:

    grpc      the wire: each call gated, authenticated, its failures mapped (grpc.calls);
              an Export stream (grpc.export_stream) hands upserts to the engine
    engine    admission (who may write what, and what it merges into), then the ledger:
              commit to the store, update the index, publish
    merge     pure: a group's exports -> its imports and verdicts; regroup: what a change writes
    store     durable: SQLite in the data dir, or CRs in the leader Namespace (kube)
    watch     the bus each commit is published on, and how a watch's changes become messages
    grpc      a WatchImports stream (grpc.watch_stream) sends each member its imports

Beside it: rest (the REST facade and dashboard), auth (bearer tokens, TokenReview),
replicas (the Lease, followers serving watches), clusterset (which ClusterSet, its status and
end), leader_cluster (the ClusterSet CR, kubectl exports, import outcomes), mirror (a SQLite
hub shown in a leader cluster). app wires one hub process; config is everything it is told.
"""

# The name the hub signs its Events and the objects it manages with.
COMPONENT = "mchub-hub"
