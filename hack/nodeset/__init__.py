"""A ClusterSet of real clusters with real nodes, mchub installed as a user installs it.

Used by the node tests (tests/nodes), `make demo-nodes` and the conformance run; see
__main__.py for the command line.
"""
