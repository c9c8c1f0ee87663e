"""What each listener of a broker demands, and how the broker itself connects to other brokers,
from the broker's config (pure: reads ``BrokerConfig``, checks it, names no files it opens).

A listener's protocol comes from ``listener.security.protocol.map``: PLAINTEXT, SSL (TLS),
SASL_PLAINTEXT (SASL over TCP) or SASL_SSL (SASL inside TLS). Every ``ssl.*`` and SASL setting can
be given per listener as ``listener.name.<listener>.<setting>`` (Kafka's rule), and
``sasl.jaas.config`` per listener and mechanism.

The inter-broker side (the controller's channels, replica fetchers, controlled shutdown) uses the
inter-broker listener's protocol, ``sasl.mechanism.inter.broker.protocol`` and the username and
password of that mechanism's JAAS entry, and trusts the listener's trust store.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkalite.config_security import SASL_MECHANISMS
from kafkalite.errors import ConfigError
from kafkalite.security.jaas import JaasError, parse_jaas_config
from kafkalite.security.principal_mapping import PrincipalMapper

__all__ = ["TlsSettings", "ListenerSecurity", "ClientSecurity", "listener_security",
           "inter_broker_security", "uses_tls", "uses_sasl"]


def uses_tls(protocol: str) -> bool:
    return protocol in ("SSL", "SASL_SSL")


def uses_sasl(protocol: str) -> bool:
    return protocol in ("SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class TlsSettings:
    """Key material as PEM files or PEM text (KIP-651's names), for either side of TLS."""

    keystore_location: str | None = None      # PEM file: certificate chain (and key)
    keystore_password: str | None = None      # of an encrypted key in the keystore file
    key_location: str | None = None           # PEM file of the key, when apart (ssl_keyfile)
    certificate_chain: str | None = None      # PEM text
    private_key: str | None = None            # PEM text
    key_password: str | None = None
    truststore_location: str | None = None
    truststore_certificates: str | None = None  # PEM text
    client_auth: str = "none"                 # server side: none | requested | required
    enabled_protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    check_hostname: bool = True               # client side

    @property
    def has_key(self) -> bool:
        return bool(self.keystore_location or (self.certificate_chain and self.private_key))

    @property
    def has_trust(self) -> bool:
        return bool(self.truststore_location or self.truststore_certificates)


@dataclass(frozen=True)
class ListenerSecurity:
    name: str
    protocol: str
    tls: TlsSettings | None = None
    sasl_mechanisms: tuple[str, ...] = ()
    plain_users: dict = field(default_factory=dict, compare=False)
    principal_mapper: PrincipalMapper | None = field(default=None, compare=False)

    @property
    def uses_tls(self) -> bool:
        return uses_tls(self.protocol)

    @property
    def uses_sasl(self) -> bool:
        return uses_sasl(self.protocol)


@dataclass(frozen=True)
class ClientSecurity:
    """How a client connects: kafka-python's names (``security_protocol``, ``ssl_cafile``,
    ``sasl_mechanism``, ``sasl_plain_username`` ...), as kafkalite's clients take them."""

    security_protocol: str = "PLAINTEXT"
    tls: TlsSettings | None = None
    sasl_mechanism: str = "PLAIN"
    sasl_username: str | None = None
    sasl_password: str | None = None

    def __post_init__(self):
        if self.security_protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise ConfigError(f"security_protocol={self.security_protocol!r}: one of PLAINTEXT, "
                              "SSL, SASL_PLAINTEXT, SASL_SSL")
        if uses_sasl(self.security_protocol) and (not self.sasl_username
                                                  or self.sasl_password is None):
            raise ConfigError(f"security_protocol={self.security_protocol} needs "
                              "sasl_plain_username and sasl_plain_password")
        if self.sasl_mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            raise ConfigError(f"sasl_mechanism={self.sasl_mechanism!r}: one of PLAIN, "
                              "SCRAM-SHA-256, SCRAM-SHA-512")

    @property
    def uses_tls(self) -> bool:
        return uses_tls(self.security_protocol)

    @property
    def uses_sasl(self) -> bool:
        return uses_sasl(self.security_protocol)

    @classmethod
    def from_kwargs(cls, security_protocol: str = "PLAINTEXT", ssl_cafile: str | None = None,
                    ssl_certfile: str | None = None, ssl_keyfile: str | None = None,
                    ssl_password: str | None = None, ssl_check_hostname: bool = True,
                    sasl_mechanism: str = "PLAIN", sasl_plain_username: str | None = None,
                    sasl_plain_password: str | None = None) -> "ClientSecurity | None":
        """kafka-python's keyword arguments; None for plain PLAINTEXT (nothing to do)."""
        protocol = (security_protocol or "PLAINTEXT").upper()
        if protocol == "PLAINTEXT":
            return None
        tls = None
        if uses_tls(protocol):
            tls = TlsSettings(keystore_location=ssl_certfile, key_location=ssl_keyfile,
                              key_password=ssl_password, truststore_location=ssl_cafile,
                              check_hostname=ssl_check_hostname)
        return cls(protocol, tls, (sasl_mechanism or "PLAIN").upper(), sasl_plain_username,
                   sasl_plain_password)


def _tls_for(config, listener: str) -> TlsSettings:
    get = lambda name: config.for_listener(listener, name)  # noqa: E731
    tls = TlsSettings(
        keystore_location=get("ssl.keystore.location"),
        keystore_password=get("ssl.keystore.password"),
        certificate_chain=get("ssl.keystore.certificate.chain"),
        private_key=get("ssl.keystore.key"), key_password=get("ssl.key.password"),
        truststore_location=get("ssl.truststore.location"),
        truststore_certificates=get("ssl.truststore.certificates"),
        client_auth=get("ssl.client.auth"), enabled_protocols=tuple(get("ssl.enabled.protocols")),
        check_hostname=config.ssl_endpoint_identification_algorithm == "https")
    stores = (("ssl.keystore.type", tls.keystore_location or tls.certificate_chain
               or tls.private_key),
              ("ssl.truststore.type", tls.truststore_location or tls.truststore_certificates))
    for setting, given in stores:
        kind = str(get(setting)).upper()
        if given and kind != "PEM":
            raise ConfigError(
                f"listener {listener}: {setting}={kind} (Kafka's default is JKS), but kafkalite "
                f"reads PEM stores only (KIP-651): set {setting}=PEM (convert a JKS or PKCS12 "
                "store with keytool or openssl)")
    return tls


def _jaas(config, listener: str, mechanism: str):
    text = config.for_listener(listener, "sasl.jaas.config", mechanism)
    if not text:
        return None
    try:
        entries = parse_jaas_config(text)
    except JaasError as exc:
        raise ConfigError(f"listener {listener}, {mechanism}: {exc}") from None
    if len(entries) != 1:
        raise ConfigError(f"listener {listener}, {mechanism}: sasl.jaas.config must hold "
                          f"exactly one login module, it has {len(entries)}")
    return entries[0]


def listener_security(config, listener: str) -> ListenerSecurity:
    """The security of one listener; ConfigError naming the key when something is missing."""
    protocol = config.security_protocol(listener)
    tls = None
    if uses_tls(protocol):
        tls = _tls_for(config, listener)
        if not tls.has_key:
            raise ConfigError(f"listener {listener} is {protocol}: set ssl.keystore.location "
                              f"(a PEM file with the key and certificate chain), or "
                              f"ssl.keystore.certificate.chain and ssl.keystore.key "
                              f"(also as listener.name.{listener.lower()}.ssl.keystore.location)")
        if tls.client_auth != "none" and not tls.has_trust:
            raise ConfigError(f"listener {listener}: ssl.client.auth={tls.client_auth} needs "
                              "ssl.truststore.location (the CA that signs client certificates)")
    mechanisms: tuple[str, ...] = ()
    plain_users: dict[str, str] = {}
    if uses_sasl(protocol):
        mechanisms = tuple(config.for_listener(listener, "sasl.enabled.mechanisms"))
        unsupported = [m for m in mechanisms if m not in SASL_MECHANISMS]
        if unsupported:
            raise ConfigError(
                f"listener {listener} is {protocol} with sasl.enabled.mechanisms="
                f"{','.join(mechanisms)}: kafkalite offers {', '.join(SASL_MECHANISMS)}, not "
                f"{', '.join(unsupported)} (GSSAPI is Kafka's default): set "
                f"sasl.enabled.mechanisms (or listener.name.{listener.lower()}."
                "sasl.enabled.mechanisms)")
        if "PLAIN" in mechanisms:
            entry = _jaas(config, listener, "PLAIN")
            plain_users = entry.plain_users() if entry is not None else {}
    try:
        mapper = PrincipalMapper(config.for_listener(listener, "ssl.principal.mapping.rules"))
    except ValueError as exc:
        raise ConfigError(f"listener {listener}: {exc}") from None
    return ListenerSecurity(listener, protocol, tls, mechanisms, plain_users, mapper)


def inter_broker_security(config, listener: str | None = None) -> ClientSecurity | None:
    """How this broker connects to the others' ``listener`` (default: the inter-broker
    listener; the controller uses control.plane.listener.name when set). None: plain TCP."""
    listener = listener or config.inter_broker_listener
    protocol = config.security_protocol(listener)
    if protocol == "PLAINTEXT":
        return None
    tls = None
    if uses_tls(protocol):
        tls = _tls_for(config, listener)
        if not tls.has_trust:
            raise ConfigError(f"security.inter.broker.protocol is {protocol}: brokers need "
                              "ssl.truststore.location to trust each other's certificates")
    mechanism = config.sasl_mechanism_inter_broker_protocol
    username = password = None
    if uses_sasl(protocol) and mechanism not in SASL_MECHANISMS:
        raise ConfigError(
            f"inter-broker listener {listener} is {protocol} with "
            f"sasl.mechanism.inter.broker.protocol={mechanism} (GSSAPI is Kafka's default): "
            f"kafkalite offers {', '.join(SASL_MECHANISMS)}: set it to one of them")
    if uses_sasl(protocol):
        entry = _jaas(config, listener, mechanism)
        if entry is None or not entry.username or entry.password is None:
            raise ConfigError(
                f"inter-broker {protocol} with {mechanism}: give the broker's own identity as "
                f"username=\"...\" password=\"...\" in listener.name.{listener.lower()}."
                f"{mechanism.lower()}.sasl.jaas.config (or sasl.jaas.config)")
        username, password = entry.username, entry.password
    return ClientSecurity(protocol, tls, mechanism, username, password)
