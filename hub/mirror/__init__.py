"""A SQLite hub shown in a leader cluster: the mirror of its state into CRs (`--mirror-kubeconfig`).

feed: what commits changed; shapes: the CRs and their comparison; mirror: the reconciler;
leader: everything the hub does in that cluster (mirror, kubectl exports, ClusterSet CR).
"""
