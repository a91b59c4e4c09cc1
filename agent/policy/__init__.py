"""ClusterSet-scoped Antrea policy rules, enforced by the Gateway's agent beside any CNI.

Pure parts: ``labels`` (label selectors, label identities), ``parse`` (an Antrea
ClusterNetworkPolicy / NetworkPolicy object -> its ClusterSet-scoped rules, or a typed
refusal), ``named_ports`` (a rule's named ports resolved per Pod), ``compile`` (parsed
policies + Tiers + identities + Pods + Services -> the desired nftables state,
``state.PolicyDatapath``, and a verdict per policy). The kernel part is
agent/linux/policy_nft.py; the Kubernetes inputs are agent/kubewatch/policy_view.py.
"""
