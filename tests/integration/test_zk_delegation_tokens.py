"""The delegation token store (zk.delegation_tokens) against a real ZooKeeper (a fresh chroot per
test): Kafka's znodes and JSON, the change notifications and their purge, sensitive ACLs with
zookeeper.set.acl, and a token manager loading what another broker wrote."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from kafkalite.security.delegation_tokens import create_hmac
from kafkalite.server.delegation_token_manager import DelegationTokenManager
from kafkalite.zk.delegation_tokens import DelegationTokenZkStore
from kafkalite.zk.znode_acls import secure_zk_client
from zk_schema import delegation_tokens as s_tokens

pytestmark = pytest.mark.integration

TOKEN = s_tokens.TokenInfo("tok-1", "User:alice", ("User:bob",), 1_000, 9_000, 5_000)


def test_tokens_and_change_notifications(zk_client):
    store = DelegationTokenZkStore(zk_client)
    store.create_paths()
    assert zk_client.exists("/delegation_token/tokens")
    assert zk_client.exists("/delegation_token/token_changes")
    store.set_or_create(TOKEN)
    data, _ = zk_client.get_data("/delegation_token/tokens/tok-1")
    assert data == TOKEN.encode() and b'"owner":"User%3Aalice"' in data
    renewed = s_tokens.TokenInfo("tok-1", "User:alice", ("User:bob",), 1_000, 9_000, 8_000)
    store.set_or_create(renewed)                       # set, not create, the second time
    assert store.get("tok-1") == renewed and store.token_ids() == ["tok-1"]
    first = store.notify_change("tok-1")
    store.delete("tok-1")
    store.notify_change("tok-1")
    assert store.get("tok-1") is None and store.token_ids() == []
    children = zk_client.get_children("/delegation_token/token_changes")
    assert first.rsplit("/", 1)[1] == children[0] and children[0].startswith("token_change_")
    last, named = store.read_changes(children, -1)
    assert named == ["tok-1", "tok-1"] and last == s_tokens.change_sequence(children[-1])
    assert store.read_changes(children, last) == (last, [])
    ctime = zk_client._get_with_stat(f"/delegation_token/token_changes/{children[0]}")[1].ctime
    assert store.purge_changes(children, now_ms=ctime) == 0
    assert store.purge_changes(children, now_ms=ctime + 16 * 60 * 1000) == 2


def test_a_manager_loads_the_tokens_another_broker_wrote(zk_client):
    store = DelegationTokenZkStore(zk_client)
    store.create_paths()
    store.set_or_create(TOKEN)
    zk_client.create("/delegation_token/tokens/broken", b"not json")
    manager = DelegationTokenManager("key", 604_800_000, 86_400_000, 3_600_000)
    manager._store = store
    [token] = manager._load_all()                     # the broken znode is skipped
    assert token.info == TOKEN and token.hmac == create_hmac("tok-1", "key")


def test_tokens_are_not_world_readable_with_zookeeper_set_acl(zk_connect):
    connect = zk_connect
    zk = secure_zk_client(connect, digest="kafka:secret", set_acl=True).start()
    try:
        store = DelegationTokenZkStore(zk)
        store.create_paths()
        store.set_or_create(TOKEN)
    finally:
        zk.stop()
    anonymous = KazooClient(hosts=connect)
    anonymous.start(timeout=15)
    try:
        with pytest.raises(NoAuthError):
            anonymous.get("/delegation_token/tokens/tok-1")
    finally:
        anonymous.stop()
        anonymous.close()
