"""Joining the ClusterSet: reading the ClusterSet (v1alpha2 or legacy v1alpha1) and its token
Secret, deciding when to join or leave, keeping the ClusterSet status."""
