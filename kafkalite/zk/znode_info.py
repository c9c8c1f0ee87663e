"""One znode as a browser shows it: its payload, its full stat and its children.

The console's ZooKeeper tree browser (``GET /api/zk?path=...``) needs more than the typed reads of
:class:`~kafkalite.zk.client.ZkClient` give (they return the payload and zkVersion only): the
czxid (a broker's epoch), mtime, the ephemeral owner (which session holds a broker's or a consumer's
registration) and the child count. Kept in its own module so the client stays as it is; kazoo is
only touched in ``kafkalite.zk`` (docs/architecture.md, 2. Layers and imports).
"""

from __future__ import annotations

from dataclasses import dataclass

from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from kafkalite.zk.client import ZkClient, translate_error


@dataclass(frozen=True)
class ZnodeStat:
    """ZooKeeper's Stat of one znode (names as zkCli prints them)."""

    czxid: int
    mzxid: int
    pzxid: int
    ctime_ms: int
    mtime_ms: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int        # the owning session id; 0 for a persistent znode
    data_length: int
    num_children: int

    @property
    def ephemeral(self) -> bool:
        return self.ephemeral_owner != 0


@dataclass(frozen=True)
class ZnodeInfo:
    path: str
    data: bytes
    stat: ZnodeStat
    children: tuple[str, ...]


def read_znode(zk: ZkClient, path: str) -> ZnodeInfo | None:
    """The znode at ``path`` (within the client's chroot), or None when it does not exist.

    Blocking: call it from a thread (the console does, through its TwistedZk pool). Other failures
    raise kafkalite's ZooKeeper errors, as the client's own reads do.
    """
    kazoo = zk._kazoo        # noqa: SLF001 - the zk package's own session; nobody else sees it
    timeout = zk.connection_timeout_s
    try:
        data, stat = kazoo.get_async(path).get(timeout=timeout)
        children = kazoo.get_children_async(path).get(timeout=timeout)
    except NoNodeError:
        return None
    except (KazooException, KazooTimeoutError) as exc:
        raise translate_error(exc, path) from exc
    return ZnodeInfo(
        path=path, data=data or b"",
        stat=ZnodeStat(
            czxid=stat.czxid, mzxid=stat.mzxid, pzxid=stat.pzxid, ctime_ms=stat.ctime,
            mtime_ms=stat.mtime, version=stat.version, cversion=stat.cversion,
            aversion=stat.aversion, ephemeral_owner=stat.ephemeralOwner,
            data_length=stat.dataLength, num_children=stat.numChildren),
        children=tuple(sorted(children)))
