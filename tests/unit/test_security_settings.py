"""Security settings from the broker config (Kafka's names, per-listener overrides), TLS contexts
from generated PEM files, principals from client certificates, the CLI's client properties and
kafka-acls' ACL expansion -- no sockets, no ZooKeeper."""

import pytest

from kafkalite.cli.acls import bindings_to_add, print_resource_acls, resource_filters
from kafkalite.cli.client_security import security_from_properties
from kafkalite.config import BrokerConfig
from kafkalite.errors import ConfigError
from kafkalite.security.acl import AclOperation, PatternType, ResourceType
from kafkalite.security.certificates import make_ca, make_certificate
from kafkalite.security.settings import (
    ClientSecurity, inter_broker_security, listener_security,
)
from kafkalite.security.tls import (
    client_context_factory, peer_distinguished_name, server_context_factory,
    stdlib_client_context,
)
from kafkalite.server.connection_security import ConnectionSecurity

BASE = {"broker.id": 1, "zookeeper.connect": "zk:2181/kl"}
#: kafkalite reads PEM stores only; Kafka's default store type is JKS, so TLS settings name PEM
PEM = {"ssl.keystore.type": "PEM", "ssl.truststore.type": "PEM"}
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="admin" password="admin-secret";')


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    directory = tmp_path_factory.mktemp("pki")
    ca = make_ca(directory)
    return ca, make_certificate(ca, directory, "broker"), make_certificate(ca, directory,
                                                                           "alice", hosts=())


def test_protocol_map_and_inter_broker_listener():
    c = BrokerConfig.from_dict({**BASE, "listeners": "INTERNAL://:9092,EXTERNAL://:9093",
                                "listener.security.protocol.map":
                                    "INTERNAL:SASL_SSL,EXTERNAL:SSL",
                                "inter.broker.listener.name": "INTERNAL"})
    assert c.security_protocol("INTERNAL") == "SASL_SSL" and c.inter_broker_listener == "INTERNAL"
    legacy = BrokerConfig.from_dict({**BASE, "listeners": "INTERNAL://:9092"})
    assert legacy.security_protocol("INTERNAL") == "PLAINTEXT"    # old configs keep working
    with pytest.raises(ConfigError, match="no entry in listener.security.protocol.map"):
        BrokerConfig.from_dict({**BASE, "listeners": "A://:1,B://:2",
                                "listener.security.protocol.map": "A:SSL"})
    with pytest.raises(ConfigError, match="not both"):
        BrokerConfig.from_dict({**BASE, "listeners": "SSL://:1", "inter.broker.listener.name":
                                "SSL", "security.inter.broker.protocol": "SSL"})
    with pytest.raises(ConfigError, match="needs a listener of that name"):
        BrokerConfig.from_dict({**BASE, "listeners": "PLAINTEXT://:1",
                                "security.inter.broker.protocol": "SASL_SSL"})
    with pytest.raises(ConfigError, match="allowed is a comma-separated list"):
        BrokerConfig.from_dict({**BASE, "listener.security.protocol.map": "A:TLS"})


def test_listener_overrides():
    c = BrokerConfig.from_dict({
        **BASE, "listeners": "SASL_SSL://:9093", "ssl.client.auth": "none",
        "listener.name.sasl_ssl.ssl.client.auth": "required",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS})
    assert c.for_listener("SASL_SSL", "ssl.client.auth") == "required"
    assert c.for_listener("OTHER", "ssl.client.auth") == "none"
    assert c.for_listener("SASL_SSL", "sasl.jaas.config", "SCRAM-SHA-512") == SCRAM_JAAS
    assert c.for_listener("SASL_SSL", "sasl.jaas.config", "PLAIN") is None
    for bad, why in ((("listener.name.x.log.dirs", "/tmp"), "cannot be set per listener"),
                     (("listener.name.x.gssapi.sasl.jaas.config", "x"), "not a SASL mechanism"),
                     (("listener.name.x.ssl.client.auth", "maybe"), "allowed is one of")):
        with pytest.raises(ConfigError, match=why):
            BrokerConfig.from_dict({**BASE, bad[0]: bad[1]})


def test_inter_broker_listener_follows_kafkas_default_protocol():
    """security.inter.broker.protocol defaults to PLAINTEXT, as in Kafka: the listener named
    PLAINTEXT carries brokers' requests to each other, wherever it stands in listeners; with no
    listener of that name Kafka refuses to start, kafkalite takes the first listener."""
    assert BrokerConfig.from_dict(BASE).security_inter_broker_protocol == "PLAINTEXT"
    both = BrokerConfig.from_dict({**BASE, "listeners": "SSL://:1,PLAINTEXT://:2"})
    assert both.inter_broker_listener == "PLAINTEXT"
    assert BrokerConfig.from_dict({**BASE, "listeners": "INTERNAL://:1,EXTERNAL://:2"}
                                  ).inter_broker_listener == "INTERNAL"
    named = BrokerConfig.from_dict({**BASE, "listeners": "SSL://:1,PLAINTEXT://:2",
                                    "inter.broker.listener.name": "SSL"})
    assert named.inter_broker_listener == "SSL"        # the default is not "given": no clash


def test_kafkas_gssapi_defaults_are_refused_at_start_up():
    """Kafka 2.8's defaults are sasl.enabled.mechanisms=GSSAPI and
    sasl.mechanism.inter.broker.protocol=GSSAPI; kafkalite reports them as its defaults too,
    but has no Kerberos: a SASL listener or SASL brokers left at them are refused, saying so."""
    plain = {**BASE, "listeners": "SASL_PLAINTEXT://:9093",
             "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
                                 'required username="admin" password="a" user_admin="a";'}
    config = BrokerConfig.from_dict(plain)
    assert (config.sasl_enabled_mechanisms, config.sasl_mechanism_inter_broker_protocol) == \
        (("GSSAPI",), "GSSAPI")
    with pytest.raises(ConfigError, match="kafkalite offers PLAIN, SCRAM-SHA-256, "
                                          "SCRAM-SHA-512, not GSSAPI"):
        listener_security(config, "SASL_PLAINTEXT")
    with pytest.raises(ConfigError, match="sasl.mechanism.inter.broker.protocol=GSSAPI"):
        inter_broker_security(config)
    given = BrokerConfig.from_dict({**plain, "sasl.enabled.mechanisms": "PLAIN",
                                    "sasl.mechanism.inter.broker.protocol": "PLAIN"})
    assert listener_security(given, "SASL_PLAINTEXT").sasl_mechanisms == ("PLAIN",)
    assert inter_broker_security(given).sasl_mechanism == "PLAIN"
    # a PLAINTEXT broker never asks: Kafka's defaults start it as they start Kafka
    assert inter_broker_security(BrokerConfig.from_dict(BASE)) is None


def test_listener_security_and_inter_broker(pki):
    ca, broker, _ = pki
    base = {**BASE, **PEM, "listeners": "SASL_SSL://:9093", "sasl.enabled.mechanisms": "PLAIN",
            "ssl.truststore.location": ca.cert_path}
    with pytest.raises(ConfigError, match="set ssl.keystore.location"):
        listener_security(BrokerConfig.from_dict(base), "SASL_SSL")
    c = BrokerConfig.from_dict({**base, "ssl.keystore.location": broker.keystore_path,
                                "security.inter.broker.protocol": "SASL_SSL",
                                "sasl.mechanism.inter.broker.protocol": "PLAIN",
                                "listener.name.sasl_ssl.plain.sasl.jaas.config":
                                    'org.apache.kafka.common.security.plain.PlainLoginModule '
                                    'required username="admin" password="pw" '
                                    'user_admin="pw" user_alice="a";'})
    listener = listener_security(c, "SASL_SSL")
    assert listener.uses_tls and listener.sasl_mechanisms == ("PLAIN",)
    assert listener.plain_users == {"admin": "pw", "alice": "a"}
    client = inter_broker_security(c)
    assert (client.security_protocol, client.sasl_username, client.sasl_password) == \
        ("SASL_SSL", "admin", "pw")
    no_identity = BrokerConfig.from_dict({**base, "ssl.keystore.location": broker.keystore_path,
                                          "security.inter.broker.protocol": "SASL_SSL",
                                          "sasl.mechanism.inter.broker.protocol": "PLAIN"})
    with pytest.raises(ConfigError, match="give the broker's own identity"):
        inter_broker_security(no_identity)


def test_kafkas_jks_store_default_is_refused_at_start_up(pki):
    """Kafka 2.8's ssl.keystore.type and ssl.truststore.type default to JKS; kafkalite reports
    that default too but reads PEM only: a TLS listener whose stores are left at JKS (or set
    to PKCS12) is refused, naming the setting."""
    ca, broker, _ = pki
    given = {**BASE, "listeners": "SSL://:9093", "ssl.keystore.location": broker.keystore_path,
             "ssl.truststore.location": ca.cert_path}
    config = BrokerConfig.from_dict(given)
    assert (config.ssl_keystore_type, config.ssl_truststore_type) == ("JKS", "JKS")
    with pytest.raises(ConfigError, match="ssl.keystore.type=JKS .* set ssl.keystore.type=PEM"):
        listener_security(config, "SSL")
    truststore = BrokerConfig.from_dict({**given, "ssl.keystore.type": "PEM",
                                         "ssl.truststore.type": "PKCS12"})
    with pytest.raises(ConfigError, match="set ssl.truststore.type=PEM"):
        listener_security(truststore, "SSL")
    assert listener_security(BrokerConfig.from_dict({**given, **PEM}), "SSL").uses_tls
    with pytest.raises(ConfigError, match="one of JKS, PKCS12, PEM"):
        BrokerConfig.from_dict({**given, "ssl.keystore.type": "BKS"})


def test_tls_contexts_from_pem_files(pki, tmp_path):
    ca, broker, alice = pki
    c = BrokerConfig.from_dict({**BASE, **PEM, "listeners": "SSL://:9093",
                                "ssl.keystore.location": broker.keystore_path,
                                "ssl.truststore.location": ca.cert_path,
                                "ssl.client.auth": "required"})
    tls = listener_security(c, "SSL").tls
    assert server_context_factory(tls).getContext() is not None
    assert client_context_factory(tls, "127.0.0.1") is not None
    assert stdlib_client_context(tls).check_hostname
    missing = tls.__class__(keystore_location=str(tmp_path / "none.pem"))
    with pytest.raises(ConfigError, match="cannot read it"):
        server_context_factory(missing)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate")
    with pytest.raises(ConfigError, match="no PEM certificate"):
        server_context_factory(tls.__class__(keystore_location=str(garbage)))


def test_an_ssl_client_certificate_names_the_principal(pki):
    from cryptography import x509

    _, _, alice = pki
    cert = x509.load_pem_x509_certificate(open(alice.cert_path, "rb").read())
    assert peer_distinguished_name(cert) == "CN=alice,O=kafkalite"     # most specific first
    c = BrokerConfig.from_dict({**BASE, **PEM, "listeners": "SSL://:9093",
                                "ssl.keystore.location": alice.keystore_path,
                                "ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/$1/U"})
    security = ConnectionSecurity(listener_security(c, "SSL"))
    security.tls_handshake_completed(cert)
    assert security.principal == "User:ALICE" and security.authenticated
    anonymous = ConnectionSecurity(listener_security(c, "SSL"))
    anonymous.tls_handshake_completed(None)
    assert anonymous.principal == "User:ANONYMOUS"


def test_client_security_options_and_properties():
    assert ClientSecurity.from_kwargs() is None
    s = ClientSecurity.from_kwargs(security_protocol="sasl_ssl", ssl_cafile="ca.pem",
                                   sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="a",
                                   sasl_plain_password="p")
    assert s.uses_tls and s.uses_sasl and s.tls.truststore_location == "ca.pem"
    with pytest.raises(ConfigError, match="needs sasl_plain_username"):
        ClientSecurity.from_kwargs(security_protocol="SASL_PLAINTEXT")
    kwargs, digest = security_from_properties({
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": SCRAM_JAAS, "ssl.truststore.location": "ca.pem",
        "ssl.endpoint.identification.algorithm": "", "zookeeper.auth.digest": "kafka:pw"})
    assert kwargs == {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
                      "sasl_plain_username": "admin", "sasl_plain_password": "admin-secret",
                      "ssl_cafile": "ca.pem", "ssl_check_hostname": False}
    assert digest == "kafka:pw"


def test_kafka_acls_expansions(capsys):
    filters = resource_filters(PatternType.LITERAL, ["orders"], ["billing"], False, [])
    principals = (("User:alice",), (), (), ())
    producer = bindings_to_add(filters, (), True, False, True, principals)
    topic = {e.operation for p, es in producer.items() if p.resource_type == ResourceType.TOPIC
             for e in es}
    assert topic == {AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE}
    assert any(p.resource_type == ResourceType.CLUSTER for p in producer)   # --idempotent
    consumer = bindings_to_add(filters, (), False, True, False, principals)
    assert {e.operation for p, es in consumer.items() if p.resource_type == ResourceType.GROUP
            for e in es} == {AclOperation.READ}
    with pytest.raises(Exception, match="--allow-principal, --deny-principal"):
        bindings_to_add(filters, (AclOperation.READ,), False, False, False, ((), (), (), ()))
    resource, acls = next(iter(consumer.items()))
    print_resource_acls(resource, acls)
    assert capsys.readouterr().out.startswith(f"Current ACLs for resource `{resource}`: \n \t(")
