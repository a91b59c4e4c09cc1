"""The per-node datapath agent: Gateway + ClusterInfoImports -> tunnels, routes, SNAT.

Pure parts (config, inputs, desired state) live at the top; everything that touches
the kernel lives in ``agent.linux``. The kube wiring (agent/main.py) converts CRs
into ``agent.inputs.AgentInputs`` and calls ``agent.runner.DatapathAgent.update``.
"""
