"""ZkClient's standing watches (kafkalite.zk.watch, on kazoo's recipes) against a real ZooKeeper:
znodes deleted and created again, a dropped connection, cancellation. Session expiry is covered
in test_zk_client.py."""

from __future__ import annotations

import queue

import pytest
from kazoo.client import KazooClient
from zk_cut_proxy import CutProxy

from kafkalite.zk import ZkClient, ZkState
from kafkalite.zk.client import split_connect_string
from kafkalite.zk.watch import ChildrenZkWatch, DataZkWatch

pytestmark = pytest.mark.integration


@pytest.fixture
def watcher(zk_connect):
    """A second client on the test's chroot, no reactor (callbacks run on kazoo's threads)."""
    client = ZkClient(zk_connect, session_timeout_ms=6000).start()
    yield client
    client.stop()


def expect(q: queue.Queue, value, timeout=10.0) -> list:
    """Read ``q`` until ``value`` shows up; returns what came before it."""
    seen = []
    while True:
        try:
            item = q.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"never saw {value!r}; saw {seen!r}") from None
        if item == value:
            return seen
        seen.append(item)


def test_children_watch_follows_a_znode_deleted_and_created_again(zk_client, watcher):
    children = queue.Queue()
    watcher.watch_children("/p", children.put)
    assert children.get(timeout=5) is None
    zk_client.create("/p")
    assert children.get(timeout=5) == []
    zk_client.create("/p/a")
    assert children.get(timeout=5) == ["a"]
    zk_client.set_data("/p", b"the parent's data is not its children")
    zk_client.delete("/p", recursive=True)
    assert expect(children, None) in ([], [[]])   # maybe after seeing /p/a go first
    zk_client.create("/p")
    zk_client.create("/p/b")
    assert expect(children, ["b"]) in ([], [[]])
    zk_client.create("/p/c")
    assert children.get(timeout=5) == ["b", "c"]
    assert children.empty()


def test_watches_rearm_after_a_dropped_connection(zk_client, zookeeper, zk_chroot):
    first_server = split_connect_string(zookeeper.connect_string)[0].split(",")[0]
    host, port = first_server.rsplit(":", 1)
    proxy = CutProxy(host, int(port))
    watcher = ZkClient(f"127.0.0.1:{proxy.port}{zk_chroot}", session_timeout_ms=20_000)
    states, children, data = queue.Queue(), queue.Queue(), queue.Queue()
    try:
        watcher.start()
        watcher.add_state_listener(states.put)
        session = watcher.session_id
        watcher.watch_children("/w", children.put)
        watcher.watch_data("/w/x", lambda d, v: data.put((d, v)))
        assert children.get(timeout=5) is None
        assert data.get(timeout=5) == (None, None)

        proxy.cut()
        expect(states, ZkState.SUSPENDED)
        zk_client.create("/w")                  # changes the watcher cannot hear of now
        zk_client.create("/w/x", b"1")
        proxy.reconnect()
        expect(states, ZkState.CONNECTED, timeout=20)
        assert watcher.session_id == session    # the same session: only the connection dropped
        assert expect(children, ["x"]) in ([], [[]])
        assert data.get(timeout=10) == (b"1", 0)

        proxy.cut()                             # and once more, with the znodes there
        expect(states, ZkState.SUSPENDED)
        proxy.reconnect()
        expect(states, ZkState.CONNECTED, timeout=20)
        zk_client.create("/w/y")
        zk_client.set_data("/w/x", b"2")
        assert children.get(timeout=10) == ["x", "y"]
        assert data.get(timeout=10) == (b"2", 1)
        assert children.empty() and data.empty()   # nothing delivered twice
    finally:
        watcher.stop()
        proxy.close()


def test_a_callback_may_cancel_its_own_watch(zk_client, watcher):
    seen = queue.Queue()

    def once(data, version):
        seen.put((data, version))
        if data is not None:
            watch.cancel()

    watch = watcher.watch_data("/once", once)
    assert seen.get(timeout=5) == (None, None)
    zk_client.create("/once", b"1")
    assert seen.get(timeout=5) == (b"1", 0)
    assert not watch.active
    later = queue.Queue()
    watcher.watch_data("/once", lambda d, v: later.put((d, v)))
    assert later.get(timeout=5) == (b"1", 0)
    zk_client.set_data("/once", b"2")
    zk_client.set_data("/once", b"3")
    # kazoo runs watch events one at a time, in order: when the later watch has seen the second
    # change, the cancelled one has had the first (and, re-armed by it, the second) too
    expect(later, (b"3", 2))
    assert seen.empty()


def test_stop_cancels_every_watch(zk_client, watcher):
    seen = queue.Queue()
    watches = [watcher.watch_children("/s", seen.put),
               watcher.watch_data("/s", lambda d, v: seen.put((d, v)))]
    assert [seen.get(timeout=5), seen.get(timeout=5)] == [None, (None, None)]
    assert [(w.kind, w.path, w.active) for w in watches] == [("children", "/s", True),
                                                             ("data", "/s", True)]
    watcher.stop()
    assert [w.active for w in watches] == [False, False]
    zk_client.create("/s")
    zk_client.create("/s/child")
    assert watches[0].active is False and seen.empty()


def test_cancel_takes_the_recipes_off_the_session(zk_connect):
    """kazoo's recipes listen to the session to read again after reconnections; a cancelled
    watch, and the ChildrenWatch of a deleted znode, must stop listening."""
    hosts, chroot = split_connect_string(zk_connect)
    kazoo = KazooClient(hosts=hosts + chroot)
    kazoo.start(timeout=10)
    try:
        before = set(kazoo.state_listeners)
        seen = queue.Queue()

        def deliver(callback, *args):
            callback(*args)

        children = ChildrenZkWatch(kazoo, "/c", seen.put, deliver).start()
        data = DataZkWatch(kazoo, "/c", lambda d, v: seen.put((d, v)), deliver).start()
        assert [seen.get(timeout=5), seen.get(timeout=5)] == [None, (None, None)]
        for _ in range(3):                          # three incarnations of /c
            kazoo.create("/c")
            assert sorted([seen.get(timeout=5), seen.get(timeout=5)], key=repr) == \
                [(b"", 0), []]
            kazoo.delete("/c")
            assert sorted([seen.get(timeout=5), seen.get(timeout=5)], key=repr) == \
                [(None, None), None]
        kazoo.create("/c")
        assert sorted([seen.get(timeout=5), seen.get(timeout=5)], key=repr) == [(b"", 0), []]
        # the two DataWatches and the ChildrenWatch of the live /c; the other three are gone
        assert len(kazoo.state_listeners - before) == 3
        children.cancel()
        data.cancel()
        assert kazoo.state_listeners == before
        kazoo.create("/c/child")
        kazoo.set("/c", b"x")
        later = queue.Queue()
        DataZkWatch(kazoo, "/c", lambda d, v: later.put(d), deliver).start()
        assert later.get(timeout=5) == b"x"
        kazoo.set("/c", b"y")
        # watch events run one at a time, in order: the cancelled recipes have had theirs
        assert later.get(timeout=5) == b"y"
        assert seen.empty()
    finally:
        kazoo.stop()
        kazoo.close()
