"""The engine's state is changed only through its methods: outside it, its fields read only."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.config import HubConfig
from hub.engine import Engine
from hub.store.sqlite import SqliteStore


@pytest.mark.parametrize(
    "field", ["store", "index", "revision", "watch_revision", "epoch", "imports_bus", "verdicts_bus", "ended"]
)
def test_the_engines_state_cannot_be_written_from_outside(tmp_path: Path, field: str) -> None:
    engine = Engine(SqliteStore(tmp_path), HubConfig(data_dir=tmp_path))
    before = getattr(engine, field)
    with pytest.raises(AttributeError):
        setattr(engine, field, before)
    assert getattr(engine, field) is before


def test_the_clusterset_ends_and_stands_again_only_through_the_engines_methods(tmp_path: Path) -> None:
    engine = Engine(SqliteStore(tmp_path), HubConfig(data_dir=tmp_path))
    engine.adopt_end("the leader ClusterSet CR was deleted")
    assert engine.ended == "the leader ClusterSet CR was deleted"
    engine.reopen()
    assert engine.ended == ""
