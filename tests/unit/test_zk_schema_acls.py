"""zk_schema.acls: Kafka's ACL znode paths, payloads and change notifications, byte for byte."""

import pytest

from zk_schema import acls as s
from zk_schema import config as s_config
from zk_schema._codec import SchemaError


def test_paths_are_kafkas():
    assert s.resource_path("LITERAL", "Topic", "orders") == "/kafka-acl/Topic/orders"
    assert s.resource_path("PREFIXED", "Group", "g-") == "/kafka-acl-extended/prefixed/Group/g-"
    assert s.change_prefix_path("LITERAL") == "/kafka-acl-changes/acl_changes_"
    assert s.change_prefix_path("PREFIXED") == "/kafka-acl-extended-changes/acl_changes_"
    with pytest.raises(SchemaError):
        s.resource_path("LITERAL", "Topic", "a/b")
    with pytest.raises(SchemaError):
        s.store_path("MATCH")
    assert s_config.user_config_path("alice") == "/config/users/alice"
    assert s_config.user_config_path("CN=a,O=b") == "/config/users/CN%3Da%2CO%3Db"
    assert s_config.ConfigChangeNotification.for_user("alice").encode() == \
        b'{"version":2,"entity_path":"users/alice"}'


def test_resource_acls_round_trip_in_kafkas_json():
    acls = s.ResourceAcls((s.AclEntryRecord("User:alice", "Allow", "Read", "*"),))
    data = acls.encode()
    assert data == (b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
                    b'"operation":"Read","host":"*"}]}')
    assert s.ResourceAcls.decode(data, 3) == s.ResourceAcls(acls.acls, 3)
    assert s.ResourceAcls.decode(b"", 0).acls == ()
    for bad in (b"[]", b'{"version":2,"acls":[]}', b'{"version":1,"acls":[1]}', b"{"):
        with pytest.raises(SchemaError):
            s.ResourceAcls.decode(bad)


def test_change_notifications():
    literal = s.AclChange("TOPIC", "orders:eu")
    assert literal.encode() == b"TOPIC:orders:eu"
    assert s.AclChange.decode(b"Topic:orders:eu", "LITERAL") == literal
    prefixed = s.AclChange("GROUP", "g-", "PREFIXED")
    assert s.AclChange.decode(prefixed.encode(), "PREFIXED") == prefixed
    with pytest.raises(SchemaError):
        s.AclChange.decode(b"no-separator", "LITERAL")
