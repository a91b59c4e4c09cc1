"""Messages kept serialized in memory and parsed when read.

A parsed protobuf message costs about 1.2 KB here (its own arena, sub-messages, the Python
object); its serialized form costs about a tenth. The hub's index holds every export and
import for its whole life, so it keeps them packed: at 100,000 exports that is the difference
between ~500 MB and ~200 MB of RSS. Reads parse a fresh copy (changing it changes nothing
stored: write a message back to change it). What hot paths ask of every message — its kind,
its owner — is kept beside it as a small facet, so counting or filtering parses nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Generic, Protocol, Self, TypeVar, overload


class _Message(Protocol):
    def SerializeToString(self, *, deterministic: bool = ...) -> bytes: ...

    @classmethod
    def FromString(cls, s: bytes) -> Self: ...


M = TypeVar("M", bound=_Message)
D = TypeVar("D")


class PackedMessages(MutableMapping[str, M], Generic[M]):
    def __init__(self, parse: Callable[[bytes], M], facet: Callable[[M], tuple[str, str]]) -> None:
        self._parse = parse
        self._facet = facet
        self._blobs: dict[str, bytes] = {}
        self._facets: dict[str, tuple[str, str]] = {}

    def __getitem__(self, name: str) -> M:
        return self._parse(self._blobs[name])

    def __setitem__(self, name: str, message: M) -> None:
        self._blobs[name] = message.SerializeToString()
        self._facets[name] = self._facet(message)

    def __delitem__(self, name: str) -> None:
        del self._blobs[name]
        del self._facets[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._blobs)

    def __len__(self) -> int:
        return len(self._blobs)

    def __contains__(self, name: object) -> bool:
        return name in self._blobs

    @overload
    def get(self, name: str, /) -> M | None: ...

    @overload
    def get(self, name: str, /, default: M | D) -> M | D: ...

    def get(self, name: str, /, default: object = None) -> object:
        # Mapping's get would raise and catch a KeyError for every name not held: the usual
        # answer when an upsert asks for the export it creates.
        blob = self._blobs.get(name)
        return default if blob is None else self._parse(blob)

    def facet(self, name: str) -> tuple[str, str]:
        return self._facets[name]

    def facets(self) -> Iterator[tuple[str, tuple[str, str]]]:
        """(name, facet) of every message, parsing none."""
        return iter(self._facets.items())

    def frozen_items(self) -> list[tuple[str, bytes]]:
        """Every (name, serialized message), sorted by name: a consistent view that costs references
        only, to parse one at a time later (a watcher's snapshot)."""
        return sorted(self._blobs.items())

    def parse(self, blob: bytes) -> M:
        return self._parse(blob)
