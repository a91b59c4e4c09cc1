"""The hub's decisions, one writer at a time: membership, admission, commit and publish, the end.

engine: the Engine every face of the hub calls; index: the in-memory view of the store;
fit: whether a write fits the store and members' watches; reports: what members said about
applying their imports.
"""

from hub.engine.engine import Clock, ClusterSetEnd, Engine, MemberRemoval, utc_now

__all__ = ["Clock", "ClusterSetEnd", "Engine", "MemberRemoval", "utc_now"]
