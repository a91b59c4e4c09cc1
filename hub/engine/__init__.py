"""The hub's decisions, one writer at a time: membership, admission, commit and publish, the end.

engine: the Engine every face of the hub calls, over its parts: admission (who may write
which export, and what it merges into), ledger (commit, then publish), membership (announce,
leave, removal), ending (the ClusterSet's end), reports (members' import status); index: the
store's state in memory; fit: whether a write fits the store and members' watches.
"""

from hub.engine.clock import Clock, utc_now
from hub.engine.ending import ClusterSetEnd
from hub.engine.engine import Engine
from hub.engine.membership import MemberRemoval

__all__ = ["Clock", "ClusterSetEnd", "Engine", "MemberRemoval", "utc_now"]
