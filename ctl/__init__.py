"""mcctl: the operator's CLI of mchub, with the verbs of `antctl mc`.

Modules, one idea each: ``main`` (argument parsing, exit codes), ``commands`` (one handler
per verb), ``output`` (tables/JSON/YAML on stdout, progress on stderr), ``errors`` (typed
failures and their exit codes), ``access`` (kubeconfig clients, the hub's REST facade),
``clusterset``, ``tokens``, ``joinconfig``, ``leader`` (init, destroy, get joinconfig),
``member`` (join, leave), ``cleanup``, ``exchange`` (get resourceexport/resourceimport),
``deploy``, ``members``, ``verify``, ``diagnose``. It imports ``kube`` and ``mcapi`` only.

Decisions where mchub differs from antctl:

- A member's ``leaders[0].server`` and the join config's ``leaderAPIServer`` are the hub's
  gRPC URL (``--hub-server``), not the leader's API server. ``init`` records it on the leader
  ClusterSet (annotation ``multicluster.antrea.io/hub-server``) for ``get joinconfig``.
- The token Secret for a member carries ``ca.crt`` of the leader cluster (from the
  ServiceAccount token Secret) unless ``--hub-ca-file`` (or ``$MCHUB_HUB_CA``) gives the hub's
  CA: members verify the hub's certificate with it.
- The hub's REST facade is ``https://``; mcctl always verifies its certificate, against
  ``--hub-ca-file``/``$MCHUB_HUB_CA`` (the same CA: gRPC and REST serve one certificate), else
  the system's trust store. ``http://`` is accepted only for a loopback hub (``mchub hub
  --insecure``), so a bearer token never crosses the network in plaintext.
- ``init`` always creates the default member token (``--no-create-token`` to skip), a
  ServiceAccount with cluster-id ``*`` (shared by members, which name their cluster per call).
- Without ``-n``, ``get clusterset`` looks in kube-system and antrea-multicluster (antctl: the
  ``default`` Namespace), and ``get membertoken``/``destroy``/``init`` use antrea-multicluster.
- An empty list is exit 0, except ``get clusterset`` (no ClusterSet: the cluster is not set up,
  exit 3). ``leave``/``destroy`` with nothing to remove exit 3.
"""
