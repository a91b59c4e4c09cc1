"""Typed API errors, rendered as metav1.Status the way kube-apiserver renders them.

Messages follow the apiserver's wording because clients parse them (kubectl prints
them; mchub members parse the ClusterIP range out of an Invalid error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class StatusCause:
    reason: str
    message: str
    field: str

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


@dataclass
class ApiError(Exception):
    """An error answered to the client as a Status object with an HTTP code."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    causes: list[StatusCause] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def to_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None or self.causes:
            details = dict(self.details or {})
            if self.causes:
                details["causes"] = [c.to_dict() for c in self.causes]
            status["details"] = details
        return status


def qualified_resource(group: str, plural: str) -> str:
    """`services` for the core group, `resourceexports.multicluster.crd.antrea.io` otherwise."""
    return f"{plural}.{group}" if group else plural


def qualified_kind(group: str, kind: str) -> str:
    return f"{kind}.{group}" if group else kind


def _details(group: str, plural: str, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return details


def not_found(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{qualified_resource(group, plural)} "{name}" not found',
        _details(group, plural, name),
    )


def already_exists(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified_resource(group, plural)} "{name}" already exists',
        _details(group, plural, name),
    )


def conflict(group: str, plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f"Operation cannot be fulfilled on {qualified_resource(group, plural)} "
        f'"{name}": the object has been modified; please apply your changes to the '
        "latest version and try again",
        _details(group, plural, name),
    )


@dataclass
class FieldError:
    """One field.ErrorList entry: `spec.clusterIPs: Invalid value: ...: detail`.

    kind is the cause reason (FieldValueInvalid, FieldValueRequired, ...); value_repr the
    bad value as Go renders it (see sandbox.govalues), None where the reason shows none.
    """

    field: str
    detail: str
    value_repr: str | None = None
    kind: str = "FieldValueInvalid"

    def body(self) -> str:
        """The text after `field: `, which is also the cause's message."""
        if self.kind == "FieldValueRequired":
            return "Required value" + (f": {self.detail}" if self.detail else "")
        if self.kind == "FieldValueForbidden":
            return f"Forbidden: {self.detail}"
        if self.kind == "FieldValueDuplicate":
            return f"Duplicate value: {self.value_repr}"
        if self.kind == "FieldValueNotSupported":
            return f"Unsupported value: {self.value_repr}" + (f": {self.detail}" if self.detail else "")
        if self.kind == "FieldValueTooLong":
            return f"Too long: {self.detail}"
        if self.kind == "FieldValueTooMany":
            return f"Too many: {self.value_repr}: {self.detail}"
        # FieldValueInvalid and FieldValueTypeInvalid read the same.
        return f"Invalid value: {self.value_repr}" + (f": {self.detail}" if self.detail else "")

    def text(self) -> str:
        return f"{self.field}: {self.body()}"


def invalid(group: str, kind: str, name: str, errors: list[FieldError]) -> ApiError:
    texts = [e.text() for e in errors]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details: dict[str, Any] = {"name": name, "kind": kind}
    if group:
        details["group"] = group
    causes = [StatusCause(e.kind, e.body(), e.field) for e in errors]
    return ApiError(
        422,
        "Invalid",
        f'{qualified_kind(group, kind)} "{name}" is invalid: {joined}',
        details,
        causes,
    )


def go_string(value: str) -> str:
    """A Go %q of a plain string, as field errors quote values."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def go_string_slice(values: list[str]) -> str:
    return "[]string{" + ", ".join(go_string(v) for v in values) + "}"


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_old_resource_version(requested: int, current: int) -> ApiError:
    return gone(f"too old resource version: {requested} ({current})")


def unknown_resource() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


class PageNotFound(Exception):
    """A path no handler serves: the apiserver's fallback answers a plain-text 404 (not a Status).
    Under /apis that is a group/version only CRDs serve when no served CRD matches the path."""


def unknown_path(builtin: bool) -> Exception:
    """404 for a path in a group/version: a Status where built-in kinds are served, else plain."""
    return unknown_resource() if builtin else PageNotFound()


def method_not_allowed() -> ApiError:
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {', '.join(accepted)}",
        {},
    )


def namespace_terminating(group: str, plural: str, name: str, namespace: str) -> ApiError:
    details = _details(group, plural, name)
    return ApiError(
        403,
        "Forbidden",
        f'{qualified_resource(group, plural)} "{name}" is forbidden: unable to create new content '
        f"in namespace {namespace} because it is being terminated",
        details,
        [StatusCause("NamespaceTerminating", f"namespace {namespace} is being terminated", "metadata.namespace")],
    )
