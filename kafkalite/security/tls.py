"""TLS contexts from ``TlsSettings``: Twisted's (pyOpenSSL) for brokers, both as servers and
when they connect to each other, and the standard library's for kafkalite's blocking clients.

Key material is PEM (KIP-651): files (``ssl.keystore.location`` with the key and its chain,
``ssl.truststore.location`` with CA certificates) or PEM text in the config. An encrypted key is
opened with ``ssl.key.password`` (or ``ssl.keystore.password``). Errors name the setting and the
file.

A client certificate's subject becomes the principal through ``ssl.principal.mapping.rules``
(``peer_principal_name``): the DN is printed most-specific-first, as Java prints it.
"""

from __future__ import annotations

import ssl as stdlib_ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from OpenSSL import crypto
from twisted.internet import ssl as twisted_ssl

from kafkalite.errors import ConfigError
from kafkalite.security.settings import TlsSettings

__all__ = ["server_context_factory", "client_context_factory", "stdlib_client_context",
           "peer_distinguished_name", "load_trusted_certificates"]

_MIN_VERSION = {"TLSv1.2": twisted_ssl.TLSVersion.TLSv1_2,
                "TLSv1.3": twisted_ssl.TLSVersion.TLSv1_3}


def _read(path: str, setting: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{setting}={path}: cannot read it ({exc.strerror})") from None


def _certificates(data: bytes, where: str) -> list[x509.Certificate]:
    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError as exc:
        raise ConfigError(f"{where}: no PEM certificate could be read ({exc})") from None
    return certs


def _key(data: bytes, password: str | None, where: str):
    try:
        return serialization.load_pem_private_key(
            data, password.encode() if password else None)
    except TypeError:
        raise ConfigError(f"{where}: the private key is encrypted; give its password "
                          "(ssl.key.password)") from None
    except ValueError as exc:
        raise ConfigError(f"{where}: no PEM private key could be read, or the password is "
                          f"wrong ({exc})") from None


def _key_and_chain(tls: TlsSettings):
    if tls.keystore_location:
        where = f"ssl.keystore.location={tls.keystore_location}"
        chain_data = _read(tls.keystore_location, "ssl.keystore.location")
        key_data = chain_data
        if tls.key_location:
            key_data = _read(tls.key_location, "ssl_keyfile")
            where = f"ssl_keyfile={tls.key_location}"
        password = tls.key_password or tls.keystore_password
    else:
        where = "ssl.keystore.certificate.chain / ssl.keystore.key"
        chain_data = (tls.certificate_chain or "").encode()
        key_data = (tls.private_key or "").encode()
        password = tls.key_password
    chain = _certificates(chain_data, where)
    return _key(key_data, password, where), chain


def load_trusted_certificates(tls: TlsSettings) -> list[x509.Certificate]:
    if tls.truststore_location:
        return _certificates(_read(tls.truststore_location, "ssl.truststore.location"),
                             f"ssl.truststore.location={tls.truststore_location}")
    if tls.truststore_certificates:
        return _certificates(tls.truststore_certificates.encode(), "ssl.truststore.certificates")
    return []


def _minimum(tls: TlsSettings):
    return _MIN_VERSION["TLSv1.2" if "TLSv1.2" in tls.enabled_protocols else "TLSv1.3"]


def server_context_factory(tls: TlsSettings) -> twisted_ssl.CertificateOptions:
    """The context of a TLS listener; ``ssl.client.auth`` decides whether a client certificate
    is asked for (requested: checked when given) or required."""
    key, chain = _key_and_chain(tls)
    cas = [crypto.X509.from_cryptography(c) for c in load_trusted_certificates(tls)]
    verify = tls.client_auth in ("requested", "required")
    return twisted_ssl.CertificateOptions(
        privateKey=crypto.PKey.from_cryptography_key(key),
        certificate=crypto.X509.from_cryptography(chain[0]),
        extraCertChain=[crypto.X509.from_cryptography(c) for c in chain[1:]],
        verify=verify, caCerts=cas if verify else None,
        requireCertificate=tls.client_auth == "required",
        raiseMinimumTo=_minimum(tls))


def client_context_factory(tls: TlsSettings, hostname: str):
    """Twisted's client side (brokers connecting to brokers): the peer's chain must lead to a
    trusted CA and, with ssl.endpoint.identification.algorithm=https, name ``hostname``."""
    cas = load_trusted_certificates(tls)
    if not cas:
        raise ConfigError("a TLS connection to another broker needs ssl.truststore.location")
    client_certificate = None
    if tls.has_key:
        key, chain = _key_and_chain(tls)
        client_certificate = twisted_ssl.PrivateCertificate.fromCertificateAndKeyPair(
            twisted_ssl.Certificate(crypto.X509.from_cryptography(chain[0])),
            twisted_ssl.KeyPair(crypto.PKey.from_cryptography_key(key)))
    if tls.check_hostname:
        roots = twisted_ssl.trustRootFromCertificates(
            [twisted_ssl.Certificate(crypto.X509.from_cryptography(c)) for c in cas])
        return twisted_ssl.optionsForClientTLS(hostname, trustRoot=roots,
                                               clientCertificate=client_certificate)
    options = dict(verify=True, caCerts=[crypto.X509.from_cryptography(c) for c in cas],
                   requireCertificate=True, raiseMinimumTo=_minimum(tls))
    if client_certificate is not None:
        options.update(privateKey=client_certificate.privateKey.original,
                       certificate=client_certificate.original)
    return twisted_ssl.CertificateOptions(**options)


def stdlib_client_context(tls: TlsSettings) -> stdlib_ssl.SSLContext:
    """The standard library's context for kafkalite's blocking clients (kafka-python's
    ssl_cafile / ssl_certfile / ssl_keyfile / ssl_password / ssl_check_hostname)."""
    try:
        if tls.truststore_location:
            context = stdlib_ssl.create_default_context(cafile=tls.truststore_location)
        else:
            context = stdlib_ssl.create_default_context(cadata=tls.truststore_certificates)
        if tls.keystore_location:
            context.load_cert_chain(tls.keystore_location, tls.key_location,
                                    tls.key_password or tls.keystore_password)
    except (OSError, stdlib_ssl.SSLError) as exc:
        raise ConfigError(f"cannot set up TLS (ssl_cafile={tls.truststore_location}, "
                          f"ssl_certfile={tls.keystore_location}): {exc}") from None
    context.check_hostname = tls.check_hostname
    context.minimum_version = stdlib_ssl.TLSVersion.TLSv1_2
    return context


def peer_distinguished_name(certificate) -> str | None:
    """The subject of a peer certificate (pyOpenSSL's X509, or None) as Java prints it:
    ``CN=alice,OU=eng,O=Acme,C=US``."""
    if certificate is None:
        return None
    if hasattr(certificate, "to_cryptography"):
        certificate = certificate.to_cryptography()
    return certificate.subject.rfc4514_string()
