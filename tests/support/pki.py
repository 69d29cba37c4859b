"""Test certificates: a CA, a server and a client certificate it signed, and a stranger's.

Made with ``cryptography`` (a dev dependency), so no test needs the ``openssl`` command.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Pki", "make_pki"]


@dataclass(frozen=True)
class Pki:
    """PEM file paths: a CA, a server and a client certificate it signed, and a stranger.

    The server's certificate names ``localhost`` and 127.0.0.1 (serverAuth); the client's
    is for clientAuth."""

    ca: str
    server_cert: str
    server_key: str
    client_cert: str
    client_key: str
    other_ca: str  # an unrelated CA ...
    other_client_cert: str  # ... and a client certificate it signed
    other_client_key: str


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Certificate | None,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    usage: x509.ObjectIdentifier | None = None,
    san: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    now = datetime.now(UTC)
    is_ca = usage is None
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer.subject if issuer is not None else _name(subject))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
            critical=False,
        )
    )
    if is_ca:
        builder = builder.add_extension(
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
    else:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write(
    directory: Path,
    name: str,
    cert: x509.Certificate,
    key: ec.EllipticCurvePrivateKey | None = None,
) -> tuple[str, str]:
    cert_path = directory / f"{name}.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path = directory / f"{name}.key"
    if key is not None:
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return str(cert_path), str(key_path)


def make_pki(directory: Path) -> Pki:
    """New keys and certificates, written as PEM files into ``directory``."""

    def new_key() -> ec.EllipticCurvePrivateKey:
        return ec.generate_private_key(ec.SECP256R1())

    ca_key, other_ca_key = new_key(), new_key()
    ca = _certificate("rackcron test CA", ca_key, None, ca_key)
    other_ca = _certificate("unrelated CA", other_ca_key, None, other_ca_key)
    server_key, client_key, other_client_key = new_key(), new_key(), new_key()
    server = _certificate(
        "localhost",
        server_key,
        ca,
        ca_key,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        san=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
    )
    client = _certificate("client", client_key, ca, ca_key, usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    other_client = _certificate(
        "stranger", other_client_key, other_ca, other_ca_key, usage=ExtendedKeyUsageOID.CLIENT_AUTH
    )
    ca_path, _ = _write(directory, "ca", ca)
    other_ca_path, _ = _write(directory, "other-ca", other_ca)
    server_paths = _write(directory, "server", server, server_key)
    client_paths = _write(directory, "client", client, client_key)
    other_paths = _write(directory, "other-client", other_client, other_client_key)
    return Pki(ca_path, *server_paths, *client_paths, other_ca_path, *other_paths)
