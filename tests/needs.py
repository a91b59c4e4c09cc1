"""What a test needs from the machine beyond Python, in one place.

A test whose need is unmet (root, a Debian tool, a browser, real clusters) is skipped with
the reason on a developer's machine, so `make test` tells the truth anywhere; under CI=true,
where .ci/run installs everything, an unmet need is a failure instead, so nothing is skipped
there unnoticed.

    @needs(tool_missing("dig"))          # a marker: checked when the test is set up
    unmet("needs root")                  # in a fixture or a test: skip here, fail in CI
"""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def unmet(reason: str) -> NoReturn:
    """Skip the test with ``reason``; under CI=true fail it instead."""
    if in_ci():
        pytest.fail(f"CI must run this test: {reason}")
    pytest.skip(reason)


def tool_missing(*tools: str, package: str = "") -> str | None:
    """Why the tools cannot be run (not on PATH), or None when all are there."""
    absent = [tool for tool in tools if shutil.which(tool) is None]
    if not absent:
        return None
    where = f" (Debian {package})" if package else ""
    return f"needs {', '.join(absent)}{where}, not on PATH"


def needs(reason: str | None) -> pytest.MarkDecorator:
    """A marker: the test runs when ``reason`` is None, else it is skipped (failed in CI) with it."""
    return pytest.mark.needs(reason)


def check_needs(item: pytest.Item) -> None:
    """Apply every ``needs`` marker of ``item`` (tests/conftest.py calls this at set-up)."""
    for mark in item.iter_markers("needs"):
        reason = mark.args[0] if mark.args else None
        if reason is not None:
            unmet(reason)
