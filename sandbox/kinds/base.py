"""The hooks a kind can give the generic object lifecycle (see sandbox.registry)."""

from __future__ import annotations

from kube.resources import Obj


class KindBehaviour:
    """Default lifecycle: no defaulting, removal blocked only by metadata.finalizers."""

    # Most built-in strategies reset .status on create; Nodes keep it.
    keeps_status_on_create = False

    def admit_create(self) -> None:
        """Refuse any create of the kind before its body is read (raise ApiError)."""

    def prepare_create(self, obj: Obj, *, dry_run: bool) -> None:
        """Default and validate a new object (raise ApiError to refuse)."""

    def prepare_update(self, old: Obj, new: Obj, *, dry_run: bool) -> None:
        """Default and validate a replacement; `new` may be changed in place."""

    def deletion_requested(self, obj: Obj) -> None:
        """Adjust an object that just got its deletionTimestamp (e.g. phase Terminating)."""

    def blocks_removal(self, obj: Obj) -> bool:
        return bool(obj["metadata"].get("finalizers"))

    def released(self, obj: Obj) -> None:
        """Free what the object held (IPs, ports) once it is gone for good."""
