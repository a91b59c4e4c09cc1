"""The JSONPath subset CRD printer columns use.

Supported: `.a.b`, `.a[0]`, `.a[*].b`, `.a['key.with.dots']` and filters such as
`.status.conditions[?(@.type=="Ready")].status`. Anything else yields no value,
which the Table shows as an empty cell (a real apiserver rejects such a CRD).
"""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_\-$]+)
      | \[(?P<index>-?\d+|\*)\]
      | \[['"](?P<quoted>[^'"]+)['"]\]
      | \[\?\(@\.(?P<filter_path>[A-Za-z0-9_.\-]+)\s*(?P<op>==|!=)\s*(?P<filter_value>"[^"]*"|'[^']*'|[^)\s]+)\)\]
    """,
    re.VERBOSE,
)


def _tokens(expression: str) -> list[re.Match[str]] | None:
    text = expression.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if text.startswith("$"):
        text = text[1:]
    out, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            return None
        out.append(match)
        pos = match.end()
    return out


def _lookup(value: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _literal(text: str) -> Any:
    if text[:1] in ("'", '"'):
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        return text


def evaluate(expression: str, obj: Any) -> list[Any]:
    """Every value the expression selects from obj (empty when nothing matches)."""
    tokens = _tokens(expression)
    if tokens is None:
        return []
    current: list[Any] = [obj]
    for token in tokens:
        following: list[Any] = []
        for value in current:
            if token.group("field") is not None or token.group("quoted") is not None:
                name = token.group("field") or token.group("quoted")
                if isinstance(value, dict) and name in value:
                    following.append(value[name])
            elif token.group("index") is not None:
                if not isinstance(value, list):
                    continue
                if token.group("index") == "*":
                    following.extend(value)
                else:
                    index = int(token.group("index"))
                    if -len(value) <= index < len(value):
                        following.append(value[index])
            else:
                if not isinstance(value, list):
                    continue
                wanted = _literal(token.group("filter_value"))
                equal = token.group("op") == "=="
                for item in value:
                    found = _lookup(item, token.group("filter_path"))
                    if (found == wanted or str(found) == str(wanted)) == equal:
                        following.append(item)
        current = following
    return current
