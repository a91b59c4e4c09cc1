"""The normalized label of a LabelIdentity export, checked before an ID is allocated.

The hub accepts only the form Antrea's member produces
(`getNormalizedLabel` in its label identity controller):

    ns:<namespace labels>&pod:<pod labels>

each side being Kubernetes' `labels.FormatLabels` of a label set: `key=value`
pairs sorted as strings (Go's sort of "key=value", so `a-b=1` comes before
`a=1`), joined by `,`, `<none>` for an empty set. Keys and values follow
Kubernetes' label syntax (apimachinery validation IsQualifiedName and
IsValidLabelValue), so neither `,`, `=`, `&` nor `:` can occur inside them and
the form parses one way only.

The Namespace side always holds `kubernetes.io/metadata.name=<namespace>`:
the API server sets that label on every Namespace (Kubernetes 1.21+) and
Antrea's member adds it where it is missing. The hub requires it, so an
identity always names its Namespace, as Antrea's policies expect.

A label is at most MAX_NORMALIZED_LABEL_BYTES. Kubernetes bounds keys and
values but not how many labels an object has; real label sets are a few
hundred bytes, and 16 KiB holds twenty maximal pairs on each side (a 317-byte
key and a 63-byte value each). The label is stored in the export, in its
import and in every member's LabelIdentity object, and every identity is kept
in the hub's memory; the bound keeps one hostile member from inflating that
by megabytes per identity.
"""

from __future__ import annotations

import re

from hub.errors import quote
from mcapi import names
from mcapi.labels import EMPTY_LABEL_SET, NAMESPACE_NAME_LABEL

MAX_NORMALIZED_LABEL_BYTES = 16 * 1024
_NS_PREFIX = "ns:"
_POD_SEPARATOR = "&pod:"
_MAX_NAME = 63
_MAX_PREFIX = 253
# A label key's name part and a non-empty label value (apimachinery's qualified name).
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_FORM = "ns:<labels>&pod:<labels>"


def _key_problem(key: str) -> str | None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or "/" in prefix or not names.is_dns1123_subdomain(prefix)):
        return (
            f"the key {quote(key)} has a prefix that is not a DNS-1123 subdomain "
            f"(at most {_MAX_PREFIX} lowercase characters)"
        )
    if not name or len(name) > _MAX_NAME or not _NAME.fullmatch(name):
        return (
            f"the key {quote(key)} is not a label key (a name of at most {_MAX_NAME} alphanumerics, "
            "'-', '_' and '.', starting and ending with an alphanumeric, after an optional prefix and '/')"
        )
    return None


def _value_problem(key: str, value: str) -> str | None:
    if value and (len(value) > _MAX_NAME or not _NAME.fullmatch(value)):
        return (
            f"the value {quote(value)} of key {quote(key)} is not a label value (empty, or at most "
            f"{_MAX_NAME} alphanumerics, '-', '_' and '.', starting and ending with an alphanumeric)"
        )
    return None


def _parse_side(problems: list[str], side: str, text: str) -> dict[str, str] | None:
    """The label set one side writes, or None when it is malformed (problems say why)."""
    if text == EMPTY_LABEL_SET:
        return {}
    if not text:
        problems.append(f"The {side} label set is empty; an empty set is written {EMPTY_LABEL_SET!r}.")
        return None
    pairs = text.split(",")
    labels: dict[str, str] = {}
    found: list[str] = []
    for pair in pairs:
        key, equals, value = pair.partition("=")
        problem = (
            f"the pair {quote(pair)} has no '='" if not equals else _key_problem(key) or _value_problem(key, value)
        )
        if problem is not None:
            found.append(problem)
        elif key in labels:
            found.append(f"the key {quote(key)} appears more than once")
        labels[key] = value
    problems.extend(f"In the {side} label set, {problem}." for problem in found)
    if found:
        return None
    if pairs != sorted(pairs):
        problems.append(
            f"The {side} label set is not sorted; members write its key=value pairs sorted, "
            "as Kubernetes' labels.FormatLabels does."
        )
        return None
    return labels


def normalized_label_problems(label: str) -> list[str]:
    """Every problem of a normalized label, each a sentence; empty when it is in the members' form."""
    size = len(label.encode(errors="surrogatepass"))
    if size > MAX_NORMALIZED_LABEL_BYTES:
        return [f"The normalized label is {size} bytes; at most {MAX_NORMALIZED_LABEL_BYTES} are allowed."]
    if not label.startswith(_NS_PREFIX):
        return [f"The normalized label {quote(label)} does not start with 'ns:'; its form is {_FORM}."]
    ns_text, separator, pod_text = label.removeprefix(_NS_PREFIX).partition(_POD_SEPARATOR)
    if not separator:
        return [f"The normalized label {quote(label)} has no '&pod:'; its form is {_FORM}."]
    problems: list[str] = []
    ns_labels = _parse_side(problems, "Namespace", ns_text)
    _parse_side(problems, "Pod", pod_text)
    if ns_labels is not None:
        namespace = ns_labels.get(NAMESPACE_NAME_LABEL)
        if namespace is None:
            problems.append(
                f"The Namespace label set has no {NAMESPACE_NAME_LABEL!r}; members always include it "
                "(Kubernetes sets it on every Namespace)."
            )
        elif not names.is_dns1123_label(namespace):
            problems.append(
                f"The Namespace name {quote(namespace)} in {NAMESPACE_NAME_LABEL!r} is not a DNS-1123 label."
            )
    return problems
