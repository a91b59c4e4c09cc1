"""The sandbox's shared watch lines stay within their bounds, oldest out first."""

from __future__ import annotations

from sandbox.shared_lines import SharedLines


def test_the_oldest_lines_go_first_when_there_are_too_many() -> None:
    lines = SharedLines(max_lines=2, max_bytes=1000)
    for revision in (1, 2, 3):
        lines.put((revision, "ADDED", "configmaps.", "v1"), b"x" * 10)
    assert lines.get((1, "ADDED", "configmaps.", "v1")) is None
    assert lines.get((3, "ADDED", "configmaps.", "v1")) == b"x" * 10
    assert len(lines) == 2 and lines.bytes == 20


def test_the_oldest_lines_go_first_when_they_weigh_too_much() -> None:
    lines = SharedLines(max_lines=100, max_bytes=25)
    lines.put((1, "ADDED", "configmaps.", "v1"), b"a" * 10)
    lines.put((2, "MODIFIED", "configmaps.", "v1"), b"b" * 10)
    lines.put((3, "DELETED", "configmaps.", "v1"), b"c" * 10)
    assert [lines.get((r, k, "configmaps.", "v1")) is not None for r, k in ((1, "ADDED"), (2, "MODIFIED"))] == [
        False,
        True,
    ]
    assert lines.bytes == 20
    lines.put((4, "ADDED", "configmaps.", "v1"), b"d" * 100)  # larger than the bound: kept by nobody
    assert len(lines) == 0 and lines.bytes == 0
