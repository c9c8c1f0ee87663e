"""Security settings of the broker config table (``kafkalite.config``): Kafka 2.x's names for
listeners (their parsing, per-listener keys, Kafka's host.name/port fallbacks), their
protocols, TLS (PEM stores, KIP-651), SASL (PLAIN, SCRAM) and the ACL authorizer.
``kafkalite.config`` re-exports everything here; ``kafkalite.security.settings`` combines them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from kafkalite.config_defs import ConfigDef, Validator, at_least, each_one_of, one_of
from kafkalite.config_kafka_names import BROKER_NO_EFFECT
from kafkalite.errors import ConfigError

# --- security (Kafka 2.x's names; see kafkalite.security.settings for how they combine) -------
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: Kafka's default mechanism (Kerberos) and its other one: accepted as values, so that Kafka's
#: defaults hold, but a SASL listener offering one, or brokers using one with each other, is
#: refused at start-up (kafkalite.security.settings) -- kafkalite cannot speak them
UNSUPPORTED_SASL_MECHANISMS = ("GSSAPI", "OAUTHBEARER")
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
DEFAULT_PROTOCOL_MAP = tuple(f"{p}:{p}" for p in SECURITY_PROTOCOLS)
_MAP_ENTRY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*:(" + "|".join(SECURITY_PROTOCOLS) + r")$")
protocol_map_valid = Validator(lambda v: all(_MAP_ENTRY.match(i) for i in v),
                               "a comma-separated list of LISTENER_NAME:PROTOCOL with PROTOCOL "
                               "one of " + ", ".join(SECURITY_PROTOCOLS))
#: Kafka's store types; kafkalite reads PEM only: a listener with a store of another type is
#: refused at start-up (kafkalite.security.settings), so that Kafka's default JKS can stand
STORE_TYPES = ("JKS", "PKCS12", "PEM")
store_type = Validator(lambda v: v.upper() in STORE_TYPES,
                       "one of JKS, PKCS12, PEM (kafkalite reads PEM files and PEM strings only, "
                       "KIP-651: convert a JKS or PKCS12 store with openssl or keytool)")
pem_only = store_type              # the old name, kept for importers
authorizer_names = Validator(lambda v: v in ("", ACL_AUTHORIZER,
                                             "kafka.security.auth.SimpleAclAuthorizer"),
                             f"empty (no authorization) or {ACL_AUTHORIZER}")

#: settings a listener may override as listener.name.<listener>.<setting> (Kafka's rule);
#: sasl.jaas.config goes per mechanism: listener.name.<listener>.<mechanism>.sasl.jaas.config
LISTENER_SETTINGS = ("ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password",
                     "ssl.key.password", "ssl.keystore.certificate.chain", "ssl.keystore.key",
                     "ssl.truststore.type", "ssl.truststore.location",
                     "ssl.truststore.certificates", "ssl.client.auth",
                     "ssl.principal.mapping.rules", "ssl.enabled.protocols",
                     "sasl.enabled.mechanisms", "sasl.jaas.config")

SECURITY_CONFIGS: tuple[ConfigDef, ...] = (
    ConfigDef("security.inter.broker.protocol", "string", "PLAINTEXT", "protocol brokers and "
              "the controller use with each other: the listener of that name (set this or "
              "inter.broker.listener.name, not both). Left at its default with no listener "
              "named PLAINTEXT, kafkalite uses the first listener (Kafka refuses to start)",
              one_of(*SECURITY_PROTOCOLS)),
    ConfigDef("sasl.mechanism.inter.broker.protocol", "string", "GSSAPI", "SASL mechanism "
              "brokers use with each other when the inter-broker listener is SASL: PLAIN, "
              "SCRAM-SHA-256 or SCRAM-SHA-512 (Kafka's default GSSAPI is refused at start-up: "
              "kafkalite has no Kerberos)",
              one_of(*SASL_MECHANISMS, *UNSUPPORTED_SASL_MECHANISMS)),
    ConfigDef("sasl.enabled.mechanisms", "list", ("GSSAPI",), "SASL mechanisms a SASL "
              "listener offers: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (Kafka's default GSSAPI, "
              "and OAUTHBEARER, are refused at start-up: set this for every SASL listener)",
              each_one_of(*SASL_MECHANISMS, *UNSUPPORTED_SASL_MECHANISMS)),
    ConfigDef("sasl.jaas.config", "password", None, "JAAS login module of the SASL listeners "
              "(PlainLoginModule or ScramLoginModule): username/password are this broker's "
              "inter-broker identity, user_<name>=\"<password>\" PLAIN's users; per listener and "
              "mechanism: listener.name.<listener>.<mechanism>.sasl.jaas.config"),
    ConfigDef("ssl.keystore.type", "string", "JKS", "format of the key store: kafkalite reads "
              "PEM only (KIP-651), so a TLS listener needs ssl.keystore.type=PEM (Kafka's "
              "default JKS is refused at start-up)", store_type),
    ConfigDef("ssl.keystore.location", "string", None, "PEM file with this broker's private "
              "key and its certificate chain"),
    ConfigDef("ssl.keystore.password", "password", None, "password of an encrypted private key "
              "in ssl.keystore.location"),
    ConfigDef("ssl.key.password", "password", None, "password of an encrypted private key "
              "(ssl.keystore.key)"),
    ConfigDef("ssl.keystore.certificate.chain", "password", None, "this broker's certificate "
              "chain as PEM text (instead of ssl.keystore.location)"),
    ConfigDef("ssl.keystore.key", "password", None, "this broker's private key as PEM text "
              "(with ssl.keystore.certificate.chain)"),
    ConfigDef("ssl.truststore.type", "string", "JKS", "format of the trust store: kafkalite "
              "reads PEM only, so a trust store needs ssl.truststore.type=PEM (Kafka's default "
              "JKS is refused at start-up)", store_type),
    ConfigDef("ssl.truststore.location", "string", None, "PEM file of the CA certificates "
              "trusted for peers (clients with ssl.client.auth, other brokers)"),
    ConfigDef("ssl.truststore.certificates", "password", None, "trusted CA certificates as "
              "PEM text (instead of ssl.truststore.location)"),
    ConfigDef("ssl.client.auth", "string", "none", "ask TLS clients for a certificate: none, "
              "requested (checked if given) or required", one_of("none", "requested",
                                                                 "required")),
    ConfigDef("ssl.principal.mapping.rules", "string", "DEFAULT", "how a client certificate's "
              "DN becomes a principal name: RULE:<regex>/<replacement>/[L|U],...,DEFAULT"),
    ConfigDef("ssl.enabled.protocols", "list", ("TLSv1.2", "TLSv1.3"), "TLS versions "
              "accepted", each_one_of("TLSv1.2", "TLSv1.3")),
    ConfigDef("ssl.endpoint.identification.algorithm", "string", "https", "https: a broker "
              "connecting to another checks its certificate names the host; empty: it "
              "does not", one_of("https", "")),
    ConfigDef("authorizer.class.name", "string", "", "kafka.security.authorizer.AclAuthorizer "
              "checks every request against the ACLs in ZooKeeper; empty allows everything",
              authorizer_names),
    ConfigDef("super.users", "string", None, "principals the authorizer lets do anything, "
              "separated by semicolons: User:admin;User:broker"),
    ConfigDef("allow.everyone.if.no.acl.found", "boolean", False, "a resource without ACLs is "
              "open to everyone (false: only super users)"),
    ConfigDef("zookeeper.set.acl", "boolean", False, "create znodes with ACLs: everyone reads, "
              "only this cluster's ZooKeeper identity (zookeeper.auth.digest) writes; "
              "credentials under /config/users are not world-readable"),
    ConfigDef("zookeeper.auth.digest", "password", None, "kafkalite's own: the ZooKeeper "
              "identity user:password (digest scheme) of brokers and tools; Kafka uses SASL "
              "through JAAS here, which a stock ZooKeeper lacks"),
    # delegation tokens (KIP-48): kafkalite.server.delegation_token_manager
    ConfigDef("delegation.token.secret.key", "password", None, "secret key that signs "
              "delegation tokens (their HMAC); the same on every broker. Unset: tokens are "
              "disabled"),
    ConfigDef("delegation.token.master.key", "password", None, "DEPRECATED: an alias for "
              "delegation.token.secret.key, used when that is not set"),
    ConfigDef("delegation.token.max.lifetime.ms", "long", 604800000, "the longest a delegation "
              "token lives, however often it is renewed", at_least(1)),
    ConfigDef("delegation.token.expiry.time.ms", "long", 86400000, "how long a delegation "
              "token lives before it must be renewed (when the request gives no period)",
              at_least(1)),
    ConfigDef("delegation.token.expiry.check.interval.ms", "long", 3600000, "how often the "
              "controller removes expired delegation tokens", at_least(1)),
)


# --- listeners ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> "Listener":
        name, rest = text.split("://", 1)
        host, port = rest.rsplit(":", 1)
        return cls(name, host, int(port))

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


_LISTENER_KEY = re.compile(r"^listener\.name\.([A-Za-z0-9_]+)\.(.+)$")


def split_listener_overrides(values: Mapping[str, Any], broker_defs: Mapping[str, ConfigDef]
                             ) -> tuple[dict, dict, list]:
    """Kafka's per-listener keys apart from the others; each is parsed by its setting's row.
    Per-listener keys of settings kafkalite does not apply come back apart (third item)."""
    overrides, rest, no_effect = {}, {}, []
    for key, raw in values.items():
        match = _LISTENER_KEY.match(key)
        if match is None:
            rest[key] = raw
            continue
        listener, setting = match.group(1).upper(), match.group(2)
        mechanism = ""
        if setting.endswith(".sasl.jaas.config"):
            mechanism = setting[:-len(".sasl.jaas.config")].upper()
            setting = "sasl.jaas.config"
            if mechanism not in SASL_MECHANISMS:
                raise ConfigError(f"{key}: {mechanism.lower()} is not a SASL mechanism "
                                  f"kafkalite offers ({', '.join(SASL_MECHANISMS)})")
        if setting not in LISTENER_SETTINGS and setting in BROKER_NO_EFFECT:
            no_effect.append(key)
            continue
        if setting not in LISTENER_SETTINGS:
            raise ConfigError(f"{key}: {setting} cannot be set per listener; per-listener "
                              f"settings are {', '.join(LISTENER_SETTINGS)}")
        overrides[(listener, mechanism, setting)] = broker_defs[setting].parse(raw)
    return overrides, rest, no_effect


def derive_listeners(parsed: dict[str, Any], given: Mapping[str, Any]) -> None:
    """Kafka 2.8's fallbacks: without listeners, PLAINTEXT://host.name:port; without
    advertised.listeners, PLAINTEXT://advertised.host.name:advertised.port when either is set
    (each defaulting to host.name / port)."""
    host = parsed.get("host_name", "")
    port = parsed.get("port", 9092)
    if "listeners" not in given:
        parsed["listeners"] = (f"PLAINTEXT://{host}:{port}",)
    advertised_host = parsed.get("advertised_host_name")
    advertised_port = parsed.get("advertised_port")
    if "advertised.listeners" not in given and (advertised_host is not None
                                                or advertised_port is not None):
        parsed["advertised_listeners"] = (
            f"PLAINTEXT://{host if advertised_host is None else advertised_host}:"
            f"{port if advertised_port is None else advertised_port}",)
