"""What the hub does in the leader cluster's Namespace beside storing its state there.

clusterset_cr: follows the leader ClusterSet CR (which ClusterSet, and its deletion);
status_writer: writes that CR's status; kubectl_exports: takes in the ResourceExports a person
applies there; import_outcomes: members' import reports as ResourceImport status and Events.
The kube store's leader (hub.replicas.leadership) and a mirrored SQLite hub (hub.mirror.leader)
both run them.
"""
