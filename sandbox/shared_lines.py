"""Watch events encoded once for every plain watch of them, as the apiserver's watch cache
serializes an event once: (revision, how the watch shows it, resource, version) -> the line.

Bounded in lines and bytes, oldest out first: every watch of an event takes it at about the
same time, so only recent events are asked for again.
"""

from __future__ import annotations

from collections import OrderedDict

LineKey = tuple[int, str, str, str]

MAX_LINES = 4096
MAX_BYTES = 16 * 1024 * 1024


class SharedLines:
    def __init__(self, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> None:
        self._lines: OrderedDict[LineKey, bytes] = OrderedDict()
        self._bytes = 0
        self._max_lines = max_lines
        self._max_bytes = max_bytes

    def get(self, key: LineKey) -> bytes | None:
        return self._lines.get(key)

    def put(self, key: LineKey, line: bytes) -> None:
        if key in self._lines:
            return
        self._lines[key] = line
        self._bytes += len(line)
        while self._lines and (len(self._lines) > self._max_lines or self._bytes > self._max_bytes):
            _, oldest = self._lines.popitem(last=False)
            self._bytes -= len(oldest)

    def __len__(self) -> int:
        return len(self._lines)

    @property
    def bytes(self) -> int:
        return self._bytes
