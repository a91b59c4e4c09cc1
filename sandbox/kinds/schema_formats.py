"""The string formats a real apiserver checks in custom resources (kube-openapi's strfmt).

apiextensions-apiserver keeps only these formats (dashes ignored: `date-time` is
`datetime`) and drops any other, so `format: int32` or `format: quantity` checks nothing.
The checks follow the Go ones: net.ParseIP / ParseCIDR / ParseMAC, strfmt's regexes for
hostnames and UUIDs, time layouts for dates. email, uri, isbn and creditcard are close
approximations of the Go parsers, not copies.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from datetime import date

_HOSTNAME = re.compile(
    r"^([a-zA-Z0-9\u00a1-\uffff]((-?[a-zA-Z0-9\u00a1-\uffff]{0,62})?)|"
    r"([a-zA-Z0-9\u00a1-\uffff](([a-zA-Z0-9\-\u00a1-\uffff]{0,61}[a-zA-Z0-9\u00a1-\uffff])?)(\.)){1,}"
    r"([a-zA-Z0-9\u00a1-\uffff])(-?[a-zA-Z0-9\u00a1-\uffff]){1,62})$"
)
_UUID = {
    "uuid": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
    "uuid3": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
    "uuid4": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"),
    "uuid5": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"),
}
_DATETIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$",
)
_GO_DURATION = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$|^0$")
_SCALA_DURATION = re.compile(
    r"^(\d+)\s*(ns|nano|nanos|nanosecond|nanoseconds|us|µs|micro|micros|microsecond|microseconds|ms|milli|"
    r"millis|millisecond|milliseconds|s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hr|hrs|hour|hours|"
    r"d|day|days|w|wk|wks|week|weeks)$"
)
_MAC = re.compile(
    r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{2}[:-]){7}[0-9A-Fa-f]{2}$|"
    r"^([0-9A-Fa-f]{2}[:-]){19}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}$|"
    r"^([0-9A-Fa-f]{4}\.){3}[0-9A-Fa-f]{4}$|^([0-9A-Fa-f]{4}\.){9}[0-9A-Fa-f]{4}$"
)
_EMAIL = re.compile(r"^(.*<)?[^\s@<>()\[\]\\,;:\"]+@[^\s@<>()\[\]\\,;:\"]+(>)?$")
_URI = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*:[^\s]*|/[^\s]*)$")
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$")
_HEXCOLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_OCTET = r"(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])"
_RGBCOLOR = re.compile(rf"^rgb\(\s*{_OCTET}\s*(,\s*{_OCTET}\s*){{2}}\)$")
_BSON_OBJECT_ID = re.compile(r"^[0-9a-fA-F]{24}$")


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        # net.ParseIP also takes IPv4-mapped forms with leading zeros rejected; close enough.
        return None


def _ipv4(text: str) -> bool:
    return _ip(text) is not None and "." in text


def _ipv6(text: str) -> bool:
    return _ip(text) is not None and ":" in text


def _cidr(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return "/" in text


def _hostname(text: str) -> bool:
    return bool(_HOSTNAME.match(text)) and len(text) <= 255 and all(len(p) <= 63 for p in text.split("."))


def _date(text: str) -> bool:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _datetime(text: str) -> bool:
    if not _DATETIME.match(text):
        return False
    try:
        date.fromisoformat(text[:10])
    except ValueError:
        return False
    hour, minute = int(text[11:13]), int(text[14:16])
    return hour < 24 and minute < 60


def _byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _isbn10(text: str) -> bool:
    digits = re.sub(r"[\s-]", "", text)
    if not re.fullmatch(r"\d{9}[\dX]", digits):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(digits))
    return total % 11 == 0


def _isbn13(text: str) -> bool:
    digits = re.sub(r"[\s-]", "", text)
    if not re.fullmatch(r"\d{13}", digits):
        return False
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(digits))
    return total % 10 == 0


def _creditcard(text: str) -> bool:
    digits = re.sub(r"[^0-9]", "", text)
    if not re.fullmatch(
        r"(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}"
        r"|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}"
        r"|6[27][0-9]{14})",
        digits,
    ):
        return False
    total = 0
    for i, c in enumerate(reversed(digits)):
        n = int(c) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


CHECKS: dict[str, Callable[[str], object]] = {
    "bsonobjectid": lambda s: bool(_BSON_OBJECT_ID.match(s)),
    "uri": lambda s: bool(_URI.match(s)),
    "email": lambda s: bool(_EMAIL.match(s)),
    "hostname": _hostname,
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "cidr": _cidr,
    "mac": lambda s: bool(_MAC.match(s)),
    **{name: rx.fullmatch for name, rx in _UUID.items()},
    "isbn": lambda s: _isbn10(s) or _isbn13(s),
    "isbn10": _isbn10,
    "isbn13": _isbn13,
    "creditcard": _creditcard,
    "ssn": lambda s: bool(_SSN.match(s)),
    "hexcolor": lambda s: bool(_HEXCOLOR.match(s)),
    "rgbcolor": lambda s: bool(_RGBCOLOR.match(s)),
    "byte": _byte,
    "password": lambda s: True,
    "date": _date,
    "duration": lambda s: bool(_GO_DURATION.match(s) or _SCALA_DURATION.match(s)),
    "datetime": _datetime,
}


def checked_format(name: str) -> str:
    """The format as the apiserver keeps it: '' for one it does not check."""
    return name if name.replace("-", "") in CHECKS else ""


def format_ok(name: str, text: str) -> bool:
    return bool(CHECKS[name.replace("-", "")](text))
