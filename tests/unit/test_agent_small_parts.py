"""Pure helpers of the agent: tunnel MACs, the probe wire format, WireGuard keys."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

import pytest

from agent.errors import ConfigError
from agent.health import decode_probe, encode_probe
from agent.tunnel_mac import gateway_tunnel_mac, node_tunnel_mac
from agent.wgkey import generate_key_pair, key_pair_from_private, load_or_create_key_pair


def test_tunnel_macs_are_locally_administered_unicast_and_differ_by_role() -> None:
    ip = IPv4Address("198.18.1.1")
    assert gateway_tunnel_mac(ip) == "0e:67:c6:12:01:01"
    assert node_tunnel_mac(ip) == "0e:6e:c6:12:01:01"
    first_octet = int(gateway_tunnel_mac(ip).split(":")[0], 16)
    assert first_octet & 0b10 and not first_octet & 0b01


def test_a_probe_round_trips_and_garbage_is_ignored() -> None:
    assert decode_probe(encode_probe(b"Q", 42)) == (b"Q", 42)
    assert decode_probe(b"hello") is None
    assert decode_probe(encode_probe(b"Q", 1).replace(b"MCHP", b"XXXX")) is None


def test_a_key_pair_matches_what_wg_derives() -> None:
    pair = generate_key_pair()
    assert key_pair_from_private(pair.private_key) == pair
    assert pair.private_key not in repr(pair)
    if shutil.which("wg"):
        derived = subprocess.run(["wg", "pubkey"], input=pair.private_key.encode(), capture_output=True, check=True)
        assert derived.stdout.decode().strip() == pair.public_key


def test_the_key_file_is_created_once_private_and_then_reused(tmp_path: Path) -> None:
    path = tmp_path / "wg" / "key"
    first = load_or_create_key_pair(path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_or_create_key_pair(path) == first


def test_a_corrupt_key_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text("not base64!")
    with pytest.raises(ConfigError):
        load_or_create_key_pair(path)


def test_a_key_file_whose_write_failed_is_not_left_behind_to_block_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "wg" / "key"
    real_fdopen = os.fdopen

    def disk_full(fd: int, *args: Any, **kwargs: Any) -> Any:
        real_fdopen(fd).close()
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fdopen", disk_full)
    with pytest.raises(ConfigError, match="cannot write"):
        load_or_create_key_pair(path)
    monkeypatch.undo()
    pair = load_or_create_key_pair(path)  # the next start creates the key, as if the first had never run
    assert load_or_create_key_pair(path) == pair
    assert path.stat().st_mode & 0o777 == 0o600
