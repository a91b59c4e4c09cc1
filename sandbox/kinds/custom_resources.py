"""How one served version of a custom resource is written and read, as kube-apiserver v1.28 does.

With conversion strategy None a real apiserver (found by experiment, see
tests/sandbox/test_crd_pruning_semantics.py):

- writing through version V: the request is pruned and defaulted by V's schema and
  validated by it; then, converted to the storage version S (only apiVersion changes),
  it is pruned by S's schema - what S does not declare is not stored;
- reading through version V (get, list, watch, and the answer to every write): the stored
  object is pruned and defaulted by S's schema, then pruned by V's schema - V's defaults
  are not applied on reads.

So a field only an older version declares is accepted, validated and then lost, and a
version's view never shows what its schema lacks. Stored numbers go through Go's JSON:
an integral float (5.0) comes back as an integer (5). The status subresource validates the
status alone, with field paths relative to it (`phase`, not `status.phase`), as the real
one does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kube.resources import Obj
from sandbox.errors import FieldError
from sandbox.kinds.schema_validation import validate
from sandbox.kinds.structural_schema import prune, prune_and_default

Schema = dict[str, Any]


@dataclass(frozen=True)
class CustomResourceVersion:
    """The codec of one served version (V) of a CRD whose storage version is S."""

    schema: Schema
    storage_schema: Schema
    api_version: str
    # V is S: a write was pruned by S already, and a read needs no second pruning.
    is_storage_version: bool = False

    def decode(self, obj: Obj) -> Obj:
        """A request body (apiVersion already the stored one) pruned and defaulted by V."""
        return prune_and_default(obj, self.schema)

    def validate(self, obj: Obj, subresource: str | None) -> list[FieldError]:
        if subresource == "status":
            status_schema = (self.schema.get("properties") or {}).get("status") or {}
            return validate(obj["status"], status_schema) if "status" in obj else []
        return validate({**obj, "apiVersion": self.api_version}, self.schema)

    def encode(self, obj: Obj) -> Obj:
        """What is stored: pruned by S (a write through S was pruned by S already)."""
        stored: Obj = _as_stored_json(obj if self.is_storage_version else prune(obj, self.storage_schema))
        return stored

    def read(self, stored: Obj) -> Obj:
        """A stored object as V shows it: pruned and defaulted by S, then pruned by V."""
        as_stored = prune_and_default(stored, self.storage_schema)
        return as_stored if self.is_storage_version else prune(as_stored, self.schema)


def _as_stored_json(value: Any) -> Any:
    """Numbers as a JSON round trip through Go leaves them: float64 5.0 is written `5`."""
    if isinstance(value, dict):
        return {k: _as_stored_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_stored_json(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value
