"""Manager and Watches: start in order, each ready before the next; stop in reverse, also after a
failed or cancelled start; Watches ready once its informers have their first lists."""

from __future__ import annotations

import asyncio

import pytest

from kube.client import KubeClient
from kube.errors import NotFound
from kube.informer import Informer
from kube.manager import Manager, Watches
from kube.resources import CONFIG_MAPS, Resource


class Part:
    """Records its starts and stops in a shared log; ``fail`` makes its start raise half-way."""

    def __init__(self, name: str, log: list[str], *, fail: BaseException | None = None, hold: bool = False) -> None:
        self.name = name
        self.log = log
        self.fail = fail
        self.hold = asyncio.Event() if hold else None
        self.holding = asyncio.Event()
        self.stop_error: Exception | None = None

    async def start(self) -> None:
        self.log.append(f"start {self.name}")
        if self.hold is not None:
            self.holding.set()
            await self.hold.wait()
        if self.fail is not None:
            raise self.fail
        self.log.append(f"ready {self.name}")

    async def stop(self) -> None:
        self.log.append(f"stop {self.name}")
        if self.stop_error is not None:
            raise self.stop_error


async def test_runnables_start_in_order_each_ready_before_the_next_and_stop_in_reverse() -> None:
    log: list[str] = []
    manager = Manager("m", [Part("a", log), Part("b", log), Part("c", log)])
    await manager.start()
    assert log == ["start a", "ready a", "start b", "ready b", "start c", "ready c"]
    log.clear()
    await manager.stop()
    assert log == ["stop c", "stop b", "stop a"]
    await manager.stop()  # nothing left to stop
    assert log == ["stop c", "stop b", "stop a"]


async def test_a_failed_start_stops_the_failing_runnable_and_those_before_it_and_raises() -> None:
    log: list[str] = []
    manager = Manager("m", [Part("a", log), Part("b", log, fail=ValueError("b cannot")), Part("c", log)])
    with pytest.raises(ValueError, match="b cannot"):
        await manager.start()
    assert log == ["start a", "ready a", "start b", "stop b", "stop a"]
    log.clear()
    with pytest.raises(ValueError, match="b cannot"):
        await manager.start()  # what failed may be started again (and fails the same way)
    assert log == ["start a", "ready a", "start b", "stop b", "stop a"]


async def test_a_cancelled_start_stops_what_it_started() -> None:
    log: list[str] = []
    held = Part("b", log, hold=True)
    manager = Manager("m", [Part("a", log), held, Part("c", log)])
    task = asyncio.create_task(manager.start())
    await held.holding.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert log == ["start a", "ready a", "start b", "stop b", "stop a"]


async def test_a_failing_stop_does_not_keep_the_others_running_and_its_error_is_raised_last() -> None:
    log: list[str] = []
    a, b, c = Part("a", log), Part("b", log), Part("c", log)
    b.stop_error = RuntimeError("b would not stop")
    c.stop_error = RuntimeError("c would not stop")
    manager = Manager("m", [a, b, c])
    await manager.start()
    log.clear()
    with pytest.raises(RuntimeError, match="c would not stop"):  # the first failure
        await manager.stop()
    assert log == ["stop c", "stop b", "stop a"]


async def test_a_start_error_is_raised_even_when_a_stop_on_the_way_back_fails() -> None:
    log: list[str] = []
    a = Part("a", log)
    a.stop_error = RuntimeError("a would not stop")
    manager = Manager("m", [a, Part("b", log, fail=ValueError("b cannot"))])
    with pytest.raises(ValueError, match="b cannot"):
        await manager.start()
    assert log == ["start a", "ready a", "start b", "stop b", "stop a"]


async def test_managers_nest_and_a_group_stopped_ahead_is_not_stopped_twice() -> None:
    log: list[str] = []
    group = Manager("group", [Part("a", log), Part("b", log)])
    last = Part("c", log)
    outer = Manager("outer", [group, last])
    await outer.start()
    log.clear()
    await group.stop()
    await outer.stop()
    assert log == ["stop b", "stop a", "stop c"]


async def test_a_started_manager_is_not_started_again() -> None:
    log: list[str] = []
    manager = Manager("m", [Part("a", log)])
    await manager.start()
    with pytest.raises(RuntimeError):
        await manager.start()
    await manager.stop()
    assert log == ["start a", "ready a", "stop a"]


async def test_watches_are_ready_once_every_informer_has_listed(client: KubeClient, namespace: str) -> None:
    await client.create(CONFIG_MAPS, {"metadata": {"name": "seen", "namespace": namespace}, "data": {}})
    first = Informer(client, CONFIG_MAPS, namespace=namespace)
    second = Informer(client, CONFIG_MAPS, namespace=namespace, label_selector="none=here")
    watches = Watches(first, second, sync_timeout=10.0)
    await watches.start()
    try:
        assert first.synced.is_set() and second.synced.is_set()
        assert first.get("seen", namespace) is not None
    finally:
        await watches.stop()
    assert first.error is None


async def test_watches_that_cannot_list_fail_their_start_and_stop_cleanly(client: KubeClient, namespace: str) -> None:
    missing = Resource("example.com", "v1", "nothings", "Nothing", True)
    listed = Informer(client, CONFIG_MAPS, namespace=namespace)
    failing = Informer(client, missing, namespace=namespace)
    manager = Manager("m", [Watches(listed, failing, sync_timeout=10.0)])
    with pytest.raises(NotFound):
        await manager.start()
    assert isinstance(failing.error, NotFound)
    assert listed.synced.is_set() and listed.error is None  # stopped, not failed
