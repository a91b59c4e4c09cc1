"""Request parsing that turns undecodable bytes into a typed value.

grpc's default deserializer raises on garbage and the caller sees INTERNAL;
we want INVALID_ARGUMENT with a message, so the servicer receives a
`Malformed` in place of the message and answers it properly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from google.protobuf.message import DecodeError


@dataclass(frozen=True)
class Malformed:
    type_name: str
    detail: str

    def describe(self) -> str:
        return f"malformed {self.type_name}: {self.detail}"


M = TypeVar("M")


def lenient(cls: type[M]) -> Callable[[bytes], M | Malformed]:
    def parse(data: bytes) -> M | Malformed:
        try:
            return cls.FromString(data)  # type: ignore[attr-defined,no-any-return]
        except (DecodeError, ValueError, RuntimeError) as exc:
            return Malformed(cls.__name__, str(exc) or "cannot decode")

    return parse
