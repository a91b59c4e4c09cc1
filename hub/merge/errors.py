"""Typed errors of the merge engine."""

from __future__ import annotations

from hub.errors import quote


class MergeError(Exception):
    """Base of the merge engine's errors."""


class UnknownExportKind(MergeError):
    """An export carries no payload the merge engine knows (validate_export catches this first)."""

    def __init__(self, export_name: str) -> None:
        super().__init__(f"export {quote(export_name)} carries no known payload kind")
        self.export_name = export_name


class UnknownGroupKind(MergeError):
    """A group key whose first element names no group kind."""

    def __init__(self, key: tuple[str, ...]) -> None:
        super().__init__(f"group key {key!r} names no known group kind")
        self.key = key


class LabelIdentityExhausted(MergeError):
    """Every label identity ID in 1..max_id is held: no new identity can be allocated."""

    def __init__(self, label: str, max_id: int) -> None:
        super().__init__(f"no free label identity ID in 1..{max_id} for label {quote(label)}")
        self.label = label
        self.max_id = max_id


class MixedGroup(MergeError):
    """merge_group was given exports that do not share one group key."""

    def __init__(self, key: tuple[str, ...], strangers: list[str]) -> None:
        super().__init__(f"exports {quote(', '.join(strangers))} do not belong to group {key!r}")
        self.key = key
        self.strangers = strangers
