"""ACLs, SCRAM credentials and ZooKeeper's own ACLs against a real ZooKeeper (a fresh chroot per
test): zk.acls' conditional writes and change notifications, update_pattern's retry, the users'
store and its change notifications, and zookeeper.set.acl's digest identity."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from kafkalite.security.acl import (
    AccessControlEntry, AclOperation, AclPermissionType, PatternType, ResourcePattern,
    ResourceType,
)
from kafkalite.security.acl_authorizer import entries_of, update_pattern
from kafkalite.zk.acls import NOT_STORED, AclZkStore
from kafkalite.zk.credentials import UserConfigZkStore
from kafkalite.zk.znode_acls import describe_acl, get_acls, secure_persistent_paths, \
    secure_zk_client
from zk_schema import acls as s_acls

pytestmark = pytest.mark.integration

ALLOW_READ = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
DENY_WRITE = AccessControlEntry("User:bob", "*", AclOperation.WRITE, AclPermissionType.DENY)


def test_conditional_writes_and_change_notifications(zk_client):
    store = AclZkStore(zk_client)
    store.create_acl_paths()
    pattern = ResourcePattern(ResourceType.TOPIC, "orders")
    assert store.get("LITERAL", "Topic", "orders").zk_version == NOT_STORED
    assert update_pattern(store, pattern, lambda cur: cur | {ALLOW_READ}) == {ALLOW_READ}
    stored = store.get("LITERAL", "Topic", "orders")
    assert entries_of(stored.entries, "t") == {ALLOW_READ}
    # a writer with a stale version loses and must re-read
    assert not store.conditional_set("LITERAL", "Topic", "orders", (), stored.zk_version + 1)
    both = update_pattern(store, pattern, lambda cur: cur | {DENY_WRITE})
    assert both == {ALLOW_READ, DENY_WRITE}
    prefixed = ResourcePattern(ResourceType.GROUP, "team-", PatternType.PREFIXED)
    update_pattern(store, prefixed, lambda cur: cur | {ALLOW_READ})
    assert zk_client.exists("/kafka-acl-extended/prefixed/Group/team-")
    assert set(store.load_all()) == {("LITERAL", "Topic", "orders"),
                                     ("PREFIXED", "Group", "team-")}
    literal = store.change_children("LITERAL")
    assert len(literal) == 2 and store.sequence_of(literal[0]) < store.sequence_of(literal[1])
    change, ctime = store.read_change("LITERAL", literal[-1])
    assert (change.resource_type, change.name, ctime > 0) == ("TOPIC", "orders", True)
    (extended,) = store.change_children("PREFIXED")
    assert store.read_change("PREFIXED", extended)[0].pattern_type == "PREFIXED"
    # removing the last entry removes the znode, announced like any change
    update_pattern(store, pattern, lambda cur: frozenset())
    assert not zk_client.exists(s_acls.resource_path("LITERAL", "Topic", "orders"))
    assert len(store.change_children("LITERAL")) == 3
    # notifications older than 15 minutes go
    children = store.change_children("LITERAL")
    assert store.purge_changes_before("LITERAL", children, now_ms=ctime - 1) == 0
    assert store.purge_changes_before("LITERAL", children,
                                      now_ms=ctime + 16 * 60 * 1000) == 3


def test_users_store_announces_changes(zk_client):
    store = UserConfigZkStore(zk_client)
    store.alter("CN=a,O=b", {"SCRAM-SHA-512": "salt=..."})
    assert store.users() == ["CN=a,O=b"]
    assert store.get("CN=a,O=b") == {"SCRAM-SHA-512": "salt=..."}
    notes = zk_client.get_config_change_notifications()
    assert store.changed_users(notes) == {"CN=a,O=b"}
    store.alter("CN=a,O=b", delete_keys=["SCRAM-SHA-512"])
    assert store.users() == [] and store.get("CN=a,O=b") == {}


def test_set_acl_locks_out_clients_without_the_identity(zk_connect):
    zk = secure_zk_client(zk_connect, digest="kafka:secret", set_acl=True).start()
    try:
        zk.ensure_path("/brokers/topics")
        secure_persistent_paths(zk, True)
        UserConfigZkStore(zk).alter("alice", {"SCRAM-SHA-512": "salt=..."})
        shown = [describe_acl(a) for a in get_acls(zk, "/brokers/topics")]
        assert shown[0].startswith("digest:kafka:") and shown[0].endswith(":cdrwa")
        assert shown[1] == "world:anyone:r"
        assert [describe_acl(a) for a in get_acls(zk, "/config/users/alice")] == [shown[0]]
    finally:
        zk.stop()
    hosts, chroot = zk_connect.split("/", 1)
    anonymous = KazooClient(hosts=f"{hosts}/{chroot}")
    anonymous.start(timeout=15)
    try:
        assert anonymous.get_children("/brokers") == ["topics"]
        for attempt in (lambda: anonymous.create("/x"), lambda: anonymous.create("/brokers/x"),
                        lambda: anonymous.get("/config/users/alice")):
            with pytest.raises(NoAuthError):
                attempt()
    finally:
        anonymous.stop()
        anonymous.close()
    other = secure_zk_client(zk_connect, digest="kafka:other").start()
    try:
        with pytest.raises(Exception, match="NoAuth"):
            other.create("/brokers/topics/t", b"{}")
    finally:
        other.stop()
