"""hub.errors.quote and the bound on refusal messages: whatever a client sends,
a refusal fits grpc's default 8 KiB metadata limit, even percent-encoded."""

from __future__ import annotations

import urllib.parse

from hypothesis import given
from hypothesis import strategies as st

from hub.errors import MAX_MESSAGE_BYTES, Forbidden, InvalidRequest, quote
from hub.merge import validate_export
from tests.unit.test_merge_builders import service_export

GRPC_METADATA_LIMIT = 8192
# repr() writes a character as at most 10 ('\U0001f600'); plus quotes, ellipsis and the length.
QUOTE_BOUND = 64 * 10 + 40


def test_a_short_value_is_quoted_whole() -> None:
    assert quote("east") == "'east'"
    assert quote("x" * 64) == repr("x" * 64)


def test_a_long_value_is_a_prefix_and_its_length_in_bytes() -> None:
    assert quote("a" * 1048576) == "'" + "a" * 32 + "…' (1048576 bytes)"
    assert quote("é" * 100).endswith("(200 bytes)")


def test_control_characters_are_escaped_so_a_value_cannot_forge_log_lines() -> None:
    assert quote("a\nlevel=error") == "'a\\nlevel=error'"
    assert "\n" not in quote("\n" * 1000)


@given(st.text())
def test_any_value_quotes_within_a_fixed_size(value: str) -> None:
    assert len(quote(value).encode()) <= QUOTE_BOUND


@given(st.text(min_size=MAX_MESSAGE_BYTES // 4, max_size=MAX_MESSAGE_BYTES * 2))
def test_a_refusal_message_is_cut_to_the_bound_and_fits_grpc_metadata_percent_encoded(message: str) -> None:
    error = InvalidRequest(message)
    assert len(str(error).encode()) <= MAX_MESSAGE_BYTES
    encoded = urllib.parse.quote(str(error), safe="".join(chr(c) for c in range(0x20, 0x7F) if c != ord("%")))
    assert len(encoded) < GRPC_METADATA_LIMIT - 256  # room for grpc-status and the other trailers


def test_a_note_survives_the_cut() -> None:
    noted = Forbidden("x" * 10_000).with_note(" (request sequence 7)")
    assert str(noted).endswith("… (message truncated) (request sequence 7)")
    assert len(str(noted).encode()) <= MAX_MESSAGE_BYTES


def test_validation_problems_quote_what_the_client_sent() -> None:
    export = service_export("east", namespace="N" * 100_000)
    export.service.ip_families.extend(["IPv9" * 50_000, "IPv4", "IPv4"])
    problems = validate_export(export)
    assert problems
    assert all(len(p.encode()) < 1024 for p in problems), [p[:100] for p in problems]
    assert any("(100000 bytes)" in p for p in problems)
