"""Counting the tasks still running in the test's event loop, by the name they were given."""

from __future__ import annotations

import asyncio

from kube.resources import Resource


def running_tasks(name: str) -> int:
    """Tasks named ``name`` not done yet in this loop."""
    return sum(1 for task in asyncio.all_tasks() if task.get_name() == name and not task.done())


def running_informers(resource: Resource) -> int:
    """Informers of ``resource`` (any version of its kind) still running in this loop."""
    return running_tasks(f"informer-{resource.qualified_name}")
