"""asyncio Kubernetes access shared by the member, the agent, the hub's kube store and the CLI.

Modules: ``client`` (connect, KubeClient: CRUD, list, watch over dicts), ``resources``
(Resource descriptors), ``errors`` (typed API errors), ``informer`` (list+watch cache),
``workqueue`` (keyed queue and reconciler loop), ``apply`` (create-or-update without churn),
``conditions``, ``events`` (EventRecorder), ``leader`` (Lease election).
"""
