"""A throwaway CA and certificates for a cluster on one machine (``cluster up --security``,
tests, benchmarks), made with ``cryptography``. Real deployments bring their own (the README
walks through doing it with openssl).

``make_ca(dir)`` writes ``ca.pem`` (certificate) and ``ca-key.pem``; ``make_certificate(ca,
dir, name, hosts)`` writes ``<name>.pem`` (key and certificate chain in one file: what
``ssl.keystore.location`` takes) and ``<name>-cert.pem`` / ``<name>-key.pem`` apart (what
librdkafka's ``ssl.certificate.location`` / ``ssl.key.location`` take). ``hosts`` become the
certificate's subject alternative names (IP addresses or DNS names), which clients check.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CertificateAuthority", "make_ca", "make_certificate", "IssuedCertificate"]

_VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class CertificateAuthority:
    cert_path: str
    key_path: str
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class IssuedCertificate:
    keystore_path: str      # key + certificate chain (ssl.keystore.location)
    cert_path: str
    key_path: str


def _write(path: Path, data: bytes, private: bool = False) -> None:
    path.write_bytes(data)
    if private:
        os.chmod(path, 0o600)


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(common_name: str, organization: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_ca(directory: str | Path, common_name: str = "kafkalite test CA",
            organization: str = "kafkalite") -> CertificateAuthority:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    name = _name(common_name, organization)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                         False), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "ca.pem", directory / "ca-key.pem"
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM))
    _write(key_path, _key_pem(key), private=True)
    return CertificateAuthority(str(cert_path), str(key_path), cert, key)


def _alternative_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def make_certificate(ca: CertificateAuthority, directory: str | Path, name: str,
                     hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
                     organization: str = "kafkalite") -> IssuedCertificate:
    """A certificate for ``name`` (its CN) signed by ``ca``, good for servers and clients."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(name, organization))
               .issuer_name(ca.certificate.subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + _VALIDITY)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                     ExtendedKeyUsageOID.CLIENT_AUTH]),
                              critical=False))
    if hosts:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([_alternative_name(h) for h in hosts]), critical=False)
    cert = builder.sign(ca.key, hashes.SHA256())
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    keystore = directory / f"{name}.pem"
    cert_path, key_path = directory / f"{name}-cert.pem", directory / f"{name}-key.pem"
    _write(keystore, _key_pem(key) + cert_pem, private=True)
    _write(cert_path, cert_pem)
    _write(key_path, _key_pem(key), private=True)
    return IssuedCertificate(str(keystore), str(cert_path), str(key_path))
