"""A Kubernetes-API-compatible server for local ClusterSets.

The sandbox speaks enough of the Kubernetes API (discovery, CRUD, list/watch,
patch, Table, tokens) for kubectl, kubernetes-asyncio and mchub's member and
hub to treat it as a real cluster. It keeps everything in memory; several
sandboxes share one asyncio loop. Where it departs from a real apiserver the
module docstrings say so.
"""
