"""TLS material for the hub: generated into the data dir on first start.

The hub serves gRPC and REST over TLS by default, both with one serving
certificate. Unless an operator hands it a certificate, it makes a private CA
and a serving certificate signed by it; members trust the CA (it is what
`ca.crt` in the member token Secret holds), and so do mcctl and browsers.
"""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mcapi.addresses import is_ip_address

_VALIDITY = timedelta(days=3650)
_DEFAULT_SANS = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class TlsFiles:
    ca_cert: Path
    cert: Path
    key: Path

    def read(self) -> tuple[bytes, bytes, bytes]:
        return self.ca_cert.read_bytes(), self.cert.read_bytes(), self.key.read_bytes()


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _san_entries(sans: tuple[str, ...]) -> list[x509.GeneralName]:
    entries: list[x509.GeneralName] = []
    for san in sans:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(san)))
        except ValueError:
            entries.append(x509.DNSName(san))
    return entries


def _write_private(path: Path, data: bytes) -> None:
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_bytes(data)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def issue_ca(common_name: str) -> tuple[bytes, bytes]:
    """A self-signed CA certificate and key, both PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def issue_serving_cert(
    ca_cert_pem: bytes, ca_key_pem: bytes, common_name: str, sans: tuple[str, ...]
) -> tuple[bytes, bytes]:
    """A serving certificate for `sans`, signed by the CA; PEM cert and key."""
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key must be an EC key")
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.SubjectAlternativeName(_san_entries(sans)), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def ensure_tls(directory: Path, extra_sans: tuple[str, ...] = ()) -> TlsFiles:
    """Return the hub's TLS files, creating a CA and serving cert when absent.

    A serving cert is re-issued (by the same CA) when it lacks a requested SAN,
    so adding `--tls-san` on a later start does not invalidate members' CA.
    """
    directory.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(directory / "ca.crt", directory / "server.crt", directory / "server.key")
    ca_key_path = directory / "ca.key"
    if not files.ca_cert.exists() or not ca_key_path.exists():
        ca_pem, ca_key = issue_ca("mchub-ca")
        files.ca_cert.write_bytes(ca_pem)
        _write_private(ca_key_path, ca_key)
    sans = tuple(dict.fromkeys((*_DEFAULT_SANS, *extra_sans)))
    if not files.cert.exists() or not _covers(files.cert.read_bytes(), sans):
        cert, key = issue_serving_cert(files.ca_cert.read_bytes(), ca_key_path.read_bytes(), "mchub-hub", sans)
        files.cert.write_bytes(cert)
        _write_private(files.key, key)
    return files


def _covers(cert_pem: bytes, sans: tuple[str, ...]) -> bool:
    cert = x509.load_pem_x509_certificate(cert_pem)
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    have = {str(v) for v in ext.get_values_for_type(x509.DNSName)}
    have |= {str(v) for v in ext.get_values_for_type(x509.IPAddress)}
    wanted = {str(ipaddress.ip_address(s)) if is_ip_address(s) else s for s in sans}
    return wanted <= have


def server_ssl_context(cert: Path, key: Path) -> ssl.SSLContext:
    """The REST facade's TLS: the serving certificate gRPC serves, TLS 1.2 or newer."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])
    return context
