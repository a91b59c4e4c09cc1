"""The Node's WireGuard key pair: created once, kept in a file readable by root only.

The public key goes into the Gateway CR (``wireGuard.publicKey``) so that remote
Gateways can add this Node as a peer; the private key never leaves the Node.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from agent.errors import ConfigError


@dataclass(frozen=True)
class WireGuardKeyPair:
    private_key: str
    """Base64, as ``wg`` expects it."""
    public_key: str

    def __repr__(self) -> str:  # never log the private key
        return f"WireGuardKeyPair(public_key={self.public_key!r})"


def generate_key_pair() -> WireGuardKeyPair:
    return key_pair_from_private(_b64(X25519PrivateKey.generate().private_bytes_raw()))


def key_pair_from_private(private_key: str) -> WireGuardKeyPair:
    try:
        raw = base64.b64decode(private_key, validate=True)
        key = X25519PrivateKey.from_private_bytes(raw)
    except ValueError as err:
        raise ConfigError(f"invalid WireGuard private key: {err}") from err
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return WireGuardKeyPair(private_key, _b64(public))


def load_or_create_key_pair(path: str | Path) -> WireGuardKeyPair:
    """Read the private key at ``path``, or create it (mode 0600) if absent."""
    target = Path(path)
    try:
        return key_pair_from_private(target.read_text().strip())
    except FileNotFoundError:
        pass
    except OSError as err:
        raise ConfigError(f"cannot read WireGuard key {target}: {err}") from err
    pair = generate_key_pair()
    # Written whole to a private temporary file, then linked into place: a failed or interrupted
    # write (a full disk, a crash) never leaves an empty key file that would refuse every later start.
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(pair.private_key + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.link(temporary, target)  # fails if another start created the key meanwhile
    except FileExistsError:
        return load_or_create_key_pair(target)
    except OSError as err:
        raise ConfigError(f"cannot write WireGuard key {target}: {err}") from err
    finally:
        temporary.unlink(missing_ok=True)
    return pair


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()
