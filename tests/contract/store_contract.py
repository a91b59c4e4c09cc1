"""The contract every hub store backend passes, written against `hub.store.base.Store` only.

How a backend plugs in: in its own test module, subclass `StoreContract`
(pytest collects the inherited tests through a `Test...` subclass) and provide
an async fixture named `store_factory` yielding an object shaped like
`StoreFactory`:

    class MyFactory:
        keeps_epoch_across_restart = False   # True if the change log survives restarts
        async def open_new(self) -> Store: ...            # fresh, empty, at a new place
        async def reopen(self, store: Store) -> Store: ... # close it, new instance, same place

    @pytest.fixture
    async def store_factory(...) -> AsyncIterator[MyFactory]:
        factory = MyFactory(...)
        yield factory
        await factory.close_all()   # the factory closes every store it made

    class TestMyStore(StoreContract):
        pass

Both methods return stores that are NOT opened yet: the contract calls
`open()` itself, because what `open()` returns is part of the contract. The
factory closes every store it made at teardown (`close()` is idempotent).

The tests live in state_contract.py (writes, reads, restarts, atomicity,
concurrency) and history_contract.py (epochs, change log, compaction); the
objects they store come from samples.py, with Antrea-style names (valid
Kubernetes object names) and whole-second times, so a backend storing
RFC3339 timestamps passes too.

Rules the contract pins down where base.py is terse:
- a revision is bumped exactly once per committed non-empty batch; a failed
  batch consumes none;
- `RevisionCompacted.oldest` is the oldest revision a watcher may still
  resume from, i.e. the `keep_after` of the last compaction;
- within one revision, the order of changes to different imports is free;
- a MemberRecord with a naive datetime is refused (the record says UTC,
  timezone-aware), and so is a batch holding an object of the wrong type;
  the whole batch then fails and nothing of it is visible.
"""

from __future__ import annotations

from tests.contract.history_contract import HistoryContract
from tests.contract.state_contract import UNSTORABLE, StateContract
from tests.contract.store_factory import StoreFactory

__all__ = ["UNSTORABLE", "StoreContract", "StoreFactory"]


class StoreContract(StateContract, HistoryContract):
    """Every backend-independent store test; subclass it with a `store_factory` fixture in scope."""
