"""Pure security pieces: the ACL model's names and filters, the per-API operation map, SCRAM
credentials in Kafka's format, ssl.principal.mapping.rules and sasl.jaas.config."""

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite import errors
from kafkalite.security import operations
from kafkalite.security.acl import (
    AccessControlEntry, AccessControlEntryFilter, AclOperation, AclPermissionType,
    KafkaPrincipal, PatternType, ResourcePattern, ResourcePatternFilter, ResourceType,
)
from kafkalite.security.jaas import JaasError, parse_jaas_config
from kafkalite.security.principal_mapping import NoMatchingRule, PrincipalMapper
from kafkalite.security.scram import (
    credential_from_config_value, credential_from_string, credential_to_string, make_credential,
)


# --- ACL model ---------------------------------------------------------------------------------

def test_enum_spellings_are_kafkas():
    assert AclOperation.parse("IdempotentWrite") is AclOperation.IDEMPOTENT_WRITE
    assert AclOperation.parse("idempotent-write") is AclOperation.IDEMPOTENT_WRITE
    assert AclOperation.parse("READ") is AclOperation.READ
    assert ResourceType.TRANSACTIONAL_ID.zk_name == "TransactionalId"
    assert AclPermissionType.ALLOW.zk_name == "Allow"
    with pytest.raises(ValueError, match="one of All, Read, Write"):
        AclOperation.parse("Fly")


def test_tostrings_are_what_kafka_acls_prints():
    entry = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    assert str(entry) == "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    assert str(ResourcePattern(ResourceType.TOPIC, "t")) == \
        "ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)"
    assert str(KafkaPrincipal.parse("User:CN=a:b")) == "User:CN=a:b"
    with pytest.raises(ValueError):
        KafkaPrincipal.parse("alice")
    with pytest.raises(ValueError):
        ResourcePattern(ResourceType.TOPIC, "t", PatternType.MATCH)


def test_filters():
    literal = ResourcePattern(ResourceType.TOPIC, "orders")
    wildcard = ResourcePattern(ResourceType.TOPIC, "*")
    prefixed = ResourcePattern(ResourceType.TOPIC, "ord", PatternType.PREFIXED)
    match = ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.MATCH)
    assert all(match.matches(p) for p in (literal, wildcard, prefixed))
    assert not match.matches(ResourcePattern(ResourceType.GROUP, "orders"))
    exact = ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.LITERAL)
    assert exact.matches(literal) and not exact.matches(wildcard) and not exact.matches(prefixed)
    assert exact.indefinite_field() is None and match.indefinite_field()
    entry = AccessControlEntry("User:a", "*", AclOperation.READ, AclPermissionType.DENY)
    assert AccessControlEntryFilter().matches(entry)
    assert not AccessControlEntryFilter(permission_type=AclPermissionType.ALLOW).matches(entry)
    assert not AccessControlEntryFilter(principal="User:b").matches(entry)


# --- the per-API operation map -----------------------------------------------------------------

@pytest.mark.parametrize("api_key, resource_type, role, operation", [
    (0, ResourceType.TOPIC, None, AclOperation.WRITE),            # Produce
    (1, ResourceType.TOPIC, operations.CONSUMER, AclOperation.READ),
    (1, ResourceType.CLUSTER, operations.FOLLOWER, AclOperation.CLUSTER_ACTION),
    (3, ResourceType.TOPIC, None, AclOperation.DESCRIBE),         # Metadata
    (8, ResourceType.GROUP, None, AclOperation.READ),             # OffsetCommit
    (8, ResourceType.TOPIC, None, AclOperation.READ),
    (11, ResourceType.GROUP, None, AclOperation.READ),            # JoinGroup
    (19, ResourceType.CLUSTER, None, AclOperation.CREATE),        # CreateTopics
    (30, ResourceType.CLUSTER, None, AclOperation.ALTER),         # CreateAcls
    (4, ResourceType.CLUSTER, None, AclOperation.CLUSTER_ACTION),  # LeaderAndIsr
])
def test_operation_map(api_key, resource_type, role, operation):
    assert operations.operation_for(api_key, resource_type, role) is operation


def test_operation_map_refuses_what_an_api_does_not_check():
    with pytest.raises(KeyError):
        operations.operation_for(1, ResourceType.TOPIC, operations.FOLLOWER)
    assert operations.error_for(ResourceType.TOPIC) is errors.TopicAuthorizationFailedError
    assert operations.error_for(ResourceType.CLUSTER).code == 31


# --- SCRAM credentials -------------------------------------------------------------------------

def test_credential_string_round_trip_and_kafkas_layout():
    credential = make_credential("SCRAM-SHA-512", "alice-secret", 4096, salt=b"0123456789ab")
    text = credential_to_string(credential)
    assert text.startswith("salt=" + base64.b64encode(b"0123456789ab").decode() + ",stored_key=")
    assert text.endswith(",iterations=4096")
    assert "alice-secret" not in text
    assert credential_from_string(text) == credential
    assert len(credential.stored_key) == 64          # SHA-512


def test_known_answer_of_rfc7677():
    # RFC 7677's SCRAM-SHA-256 example: user "user", password "pencil", 4096 iterations
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = make_credential("SCRAM-SHA-256", "pencil", 4096, salt=salt)
    from scramp import ScramMechanism
    server = ScramMechanism("SCRAM-SHA-256").make_server(
        lambda user: credential.auth_info(), s_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    server.set_client_first("n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert server.get_server_first() == ("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                                         "s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    server.set_client_final("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                            "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert server.get_server_final() == "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_kafka_configs_syntax():
    c = credential_from_config_value("SCRAM-SHA-256", "[iterations=8192,password=s3cret]")
    assert c.iterations == 8192
    assert credential_from_config_value("SCRAM-SHA-512", "[password=x]").iterations == 4096
    for bad in ("[iterations=8192]", "[pass=x]", "[iterations=100,password=x]"):
        with pytest.raises(ValueError):
            credential_from_config_value("SCRAM-SHA-512", bad)
    for bad in ("salt=abc", "salt=!!,stored_key=a,server_key=b,iterations=1"):
        with pytest.raises(ValueError):
            credential_from_string(bad)


# --- ssl.principal.mapping.rules (Kafka's SslPrincipalMapperTest cases) -------------------------

def test_principal_mapping_rules():
    mapper = PrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, "
                             "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U, "
                             "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L, DEFAULT")
    assert mapper.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert mapper.name("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=x,ST=y,C=US") == "DUKE@JAVASOFT"
    assert mapper.name("cn=duke,OU=x") == "duke"
    assert mapper.name("OU=nothing") == "OU=nothing"
    assert PrincipalMapper(None).name("CN=a,O=b") == "CN=a,O=b"
    with pytest.raises(NoMatchingRule):
        PrincipalMapper("RULE:^CN=(.*)$/$1/").name("O=x")
    with pytest.raises(ValueError):
        PrincipalMapper("RULE:^CN=(.*)$/$1/X")
    # a $n beyond the groups stays literal
    assert PrincipalMapper("RULE:^CN=(.*)$/$1-$2/").name("CN=a") == "a-$2"


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="abcXYZ=,. ", min_size=1, max_size=30))
def test_default_keeps_any_dn(dn):
    assert PrincipalMapper("DEFAULT").name(dn) == dn


# --- sasl.jaas.config --------------------------------------------------------------------------

def test_jaas_config():
    (entry,) = parse_jaas_config(
        'org.apache.kafka.common.security.plain.PlainLoginModule required\n'
        '  username="admin" password="admin-secret" user_admin="admin-secret" '
        'user_alice="a \\"quoted\\" secret";')
    assert entry.flag == "required" and entry.username == "admin"
    assert entry.plain_users() == {"admin": "admin-secret", "alice": 'a "quoted" secret'}
    for bad in ("PlainLoginModule username=\"x\";", "M required username=\"x\"",
                "M required username;", ""):
        with pytest.raises(JaasError):
            parse_jaas_config(bad)
