"""Several hub replicas, one writer: who leads, and how the others serve watches meanwhile.

leadership: the kube store's Lease election, and what the leader does in the leader cluster;
follower: a replica that does not lead serves watches and reads from the leader's history,
read from a SQLite data dir (sqlite_source) or from the kube store's CRs (kube_source);
pod_role: the replica's role on its Pod, for Services to select the leader.
"""
