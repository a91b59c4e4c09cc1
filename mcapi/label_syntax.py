"""Kubernetes' syntax of labels and annotations (apimachinery's ValidateLabels and
ValidateAnnotations), for what a ServiceExport asks to put on its ServiceImports.

A ServiceExport's ``spec.exportedLabels`` and ``spec.exportedAnnotations`` are plain string
maps in the MCS CRD (the API server checks nothing in them), but every member writes them on a
ServiceImport, whose metadata the API server does check: a key or value it would refuse must be
caught where the export is made (the member says Valid=False) and where it is merged (the hub
refuses the export), not in every importing cluster.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from mcapi import names

# A label key's name part, and a label value (at most this long, and non-empty for a name).
MAX_NAME_CHARS = 63
MAX_PREFIX_CHARS = 253
# The API server's bound on all annotations of one object together (keys and values).
MAX_ANNOTATIONS_BYTES = 256 * 1024
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
# How many problems a sentence lists at most: one is enough to act on, all would be unbounded.
MAX_PROBLEMS = 5

Quote = Callable[[str], str]


def _short(value: str) -> str:
    return repr(value if len(value) <= 64 else value[:32] + "…")


def is_qualified_name(key: str) -> bool:
    """A label or annotation key: ``[prefix/]name``, the prefix a DNS-1123 subdomain."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or "/" in prefix or not names.is_dns1123_subdomain(prefix)):
        return False
    return 0 < len(name) <= MAX_NAME_CHARS and bool(_NAME.fullmatch(name))


def is_label_value(value: str) -> bool:
    """Empty, or a name of at most 63 characters."""
    return not value or (len(value) <= MAX_NAME_CHARS and bool(_NAME.fullmatch(value)))


def _key_problem(what: str, key: str, quote: Quote) -> str:
    return (
        f"the {what} key {quote(key)} is not a qualified name (a name of at most {MAX_NAME_CHARS} alphanumerics, "
        "'-', '_' and '.', starting and ending with an alphanumeric, after an optional DNS-1123 subdomain and '/')"
    )


def label_problems(labels: Mapping[str, str], quote: Quote = _short) -> list[str]:
    """What the API server would refuse in these labels, each a sentence fragment."""
    problems: list[str] = []
    for key, value in sorted(labels.items()):
        if not is_qualified_name(key):
            problems.append(_key_problem("label", key, quote))
        elif not is_label_value(value):
            problems.append(
                f"the value {quote(value)} of label {quote(key)} is not a label value (empty, or at most "
                f"{MAX_NAME_CHARS} alphanumerics, '-', '_' and '.', starting and ending with an alphanumeric)"
            )
    return problems


def annotation_problems(annotations: Mapping[str, str], quote: Quote = _short) -> list[str]:
    """What the API server would refuse in these annotations, each a sentence fragment."""
    problems = [_key_problem("annotation", key, quote) for key in sorted(annotations) if not is_qualified_name(key)]
    size = sum(
        len(k.encode(errors="surrogatepass")) + len(v.encode(errors="surrogatepass")) for k, v in annotations.items()
    )
    if size > MAX_ANNOTATIONS_BYTES:
        problems.append(f"the annotations take {size} bytes; at most {MAX_ANNOTATIONS_BYTES} are allowed")
    return problems


def sentence(what: str, problems: list[str]) -> str:
    """One sentence naming the first few problems (the rest are counted)."""
    shown = "; ".join(problems[:MAX_PROBLEMS])
    more = len(problems) - MAX_PROBLEMS
    return f"The {what} cannot be written on a ServiceImport: {shown}" + (f" (and {more} more)." if more > 0 else ".")
