"""Object name rules (DNS-1123 subdomain/label, DNS-1035 label, path segment) and generateName."""

from __future__ import annotations

import re
import secrets

from sandbox.errors import FieldError, go_string

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

# Characters generateName suffixes are drawn from (no vowels, no look-alikes).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def generate_name(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))


def check_subdomain(name: str, field: str = "metadata.name") -> list[FieldError]:
    if len(name) > 253:
        return [FieldError(field, "must be no more than 253 characters", go_string(name))]
    if not _SUBDOMAIN.match(name):
        return [
            FieldError(
                field,
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
                "regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                go_string(name),
            )
        ]
    return []


def check_label(name: str, field: str = "metadata.name") -> list[FieldError]:
    if len(name) > 63:
        return [FieldError(field, "must be no more than 63 characters", go_string(name))]
    if not _LABEL.match(name):
        return [
            FieldError(
                field,
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
                "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                go_string(name),
            )
        ]
    return []


def check_dns1035(name: str, field: str = "metadata.name") -> list[FieldError]:
    if len(name) > 63:
        return [FieldError(field, "must be no more than 63 characters", go_string(name))]
    if not _DNS1035.match(name):
        return [
            FieldError(
                field,
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
                "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
                "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                go_string(name),
            )
        ]
    return []


def check_path_segment(name: str, field: str = "metadata.name") -> list[FieldError]:
    if name in (".", ".."):
        return [FieldError(field, f"may not be '{name}'", go_string(name))]
    for bad in ("/", "%"):
        if bad in name:
            return [FieldError(field, f"may not contain '{bad}'", go_string(name))]
    return []


_RULES = {
    "namespaces": check_label,
    "services": check_dns1035,
    "roles": check_path_segment,
    "rolebindings": check_path_segment,
    "clusterroles": check_path_segment,
    "clusterrolebindings": check_path_segment,
}


def check_name(plural: str, name: str) -> list[FieldError]:
    return _RULES.get(plural, check_subdomain)(name)
