"""The agent's Kubernetes side: watching what feeds the datapath (``view``), publishing the
Node's annotations (``node_annotations``: its WireGuard key, its verdict on its own Gateway) and
remote Gateway reachability (``reachability``).
agent/main.py puts them together; agent/kube_inputs.py holds the pure conversion."""
