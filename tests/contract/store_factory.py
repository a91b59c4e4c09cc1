"""What a backend's `store_factory` fixture yields (see store_contract's doc)."""

from __future__ import annotations

from typing import Protocol

from hub.store.base import Snapshot, Store


class StoreFactory(Protocol):
    """Makes stores for the contract; both methods return stores not yet opened."""

    @property
    def keeps_epoch_across_restart(self) -> bool:
        """True when the change log (hence the epoch) survives a restart."""
        ...

    async def open_new(self) -> Store:
        """A fresh, empty store at a new place."""
        ...

    async def reopen(self, store: Store) -> Store:
        """Close `store` and return another instance on the same place, as after a restart."""
        ...


async def open_new(factory: StoreFactory) -> tuple[Store, Snapshot]:
    store = await factory.open_new()
    return store, await store.open()
