"""The raw znode operations that kafkalite's typed ZooKeeper operations are written against.

:class:`ZnodeOps` is what one ZooKeeper session offers: reads, writes, atomic multi-operations and
pipelined batches of them. :class:`~kafkalite.zk.client.ZkClient` implements it over kazoo; the
typed layers (:mod:`~kafkalite.zk.cluster_ops`, :mod:`~kafkalite.zk.controller_ops`,
:mod:`~kafkalite.zk.consumer_ops`) only call these methods, so an in-memory implementation runs
the very same typed code in unit tests. Failures are kafkalite errors (:mod:`kafkalite.zk.errors`).

Fencing lives here too: :meth:`ZnodeOps.fenced_multi` is the one way a controller writes, a
transaction that starts with a check of ``/controller_epoch``'s zkVersion (Kafka's
KafkaZkClient with its expected controller epoch zkVersion).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from zk_schema import controller as s_controller

from kafkalite.errors import KafkaError
from kafkalite.topic_partition import TopicPartition
from kafkalite.zk.errors import (
    ControllerMovedError, ZkBadVersionError, ZkNodeExistsError, ZkNoNodeError,
)


@dataclass(frozen=True)
class ZkCreate:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequence: bool = False


@dataclass(frozen=True)
class ZkSetData:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True)
class ZkDelete:
    path: str
    version: int = -1


@dataclass(frozen=True)
class ZkCheck:
    path: str
    version: int


ZkOp = ZkCreate | ZkSetData | ZkDelete | ZkCheck


class ZnodeOps:
    """Raw operations of one ZooKeeper session (abstract; see the module docstring).

    ``stat`` objects carry ``version``, ``czxid`` and ``ephemeralOwner`` (ZooKeeper's names).
    """

    @property
    def session_id(self) -> int | None:
        raise NotImplementedError

    def exists(self, path: str) -> bool:
        raise NotImplementedError

    def get_data(self, path: str) -> tuple[bytes, int] | None:
        """(data, zk_version), or None when the znode does not exist."""
        raise NotImplementedError

    def _get_with_stat(self, path: str) -> tuple[bytes, Any] | None:
        """(data, stat), or None when the znode does not exist."""
        raise NotImplementedError

    def _get_many(self, paths: Sequence[str]) -> list[tuple[bytes, Any] | None]:
        """Pipelined reads: (data, stat) per path, None for missing znodes."""
        raise NotImplementedError

    def get_children(self, path: str) -> list[str]:
        """Sorted child names ([] when the znode does not exist)."""
        raise NotImplementedError

    def create(self, path: str, data: bytes = b"", *, ephemeral: bool = False,
               sequence: bool = False, makepath: bool = False) -> str:
        raise NotImplementedError

    def set_data(self, path: str, data: bytes, version: int = -1) -> int:
        raise NotImplementedError

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> bool:
        raise NotImplementedError

    def ensure_path(self, path: str) -> None:
        raise NotImplementedError

    def _create_ephemeral_checked(self, path: str, data: bytes) -> Any:
        """Create an ephemeral znode, succeeding when this session holds it already; the stat."""
        raise NotImplementedError

    def multi_many(self, batches: Sequence[Sequence[ZkOp]]) -> list[list[Any] | KafkaError]:
        """Each batch atomically, all batches pipelined. Per batch: its results (created path /
        new zk_version / True / True per op), or the error of its first failing op, with
        ``failed_op`` and ``failed_index`` set."""
        raise NotImplementedError

    # --- built on the above -------------------------------------------------------------------

    def multi(self, ops: Sequence[ZkOp]) -> list[Any]:
        """Run ``ops`` atomically (results as :meth:`multi_many`); raises the first failing op's
        error naming its path."""
        outcome = self.multi_many([ops])[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def fenced_multi_many(self, controller_epoch_zk_version: int,
                          batches: Sequence[Sequence[ZkOp]]) -> list[list[Any] | KafkaError]:
        """:meth:`multi_many` where each batch first checks that ``/controller_epoch`` is still at
        ``controller_epoch_zk_version``; a batch that fails that check comes back as
        ControllerMovedError. Results leave the check out."""
        check = ZkCheck(s_controller.CONTROLLER_EPOCH_PATH, controller_epoch_zk_version)
        outcomes = self.multi_many([[check, *ops] for ops in batches])
        out: list[list[Any] | KafkaError] = []
        for outcome in outcomes:
            if not isinstance(outcome, Exception):
                out.append(outcome[1:])
            elif (isinstance(outcome, (ZkBadVersionError, ZkNoNodeError))
                  and getattr(outcome, "failed_index", None) == 0):
                out.append(ControllerMovedError(
                    f"/controller_epoch is no longer at zkVersion {controller_epoch_zk_version}: "
                    "another broker is controller"))
            else:
                index = getattr(outcome, "failed_index", None)
                if index is not None:        # the caller's op numbering, without the check
                    outcome.failed_index = index - 1  # type: ignore[attr-defined]
                out.append(outcome)
        return out

    def fenced_multi(self, controller_epoch_zk_version: int, ops: Sequence[ZkOp]) -> list[Any]:
        """``ops`` in one transaction that first checks ``/controller_epoch`` is still at
        ``controller_epoch_zk_version``. Raises ControllerMovedError when it is not; other failures
        as :meth:`multi`. Returns the results of ``ops`` (without the check)."""
        outcome = self.fenced_multi_many(controller_epoch_zk_version, [ops])[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def _create_or_set(self, path: str, data: bytes, acl=None) -> int:
        """Write ``data`` whether or not the znode exists; returns the zk_version. ``acl``: the
        ZooKeeper ACL it gets if it is created."""
        while True:
            try:
                return self.set_data(path, data)
            except ZkNoNodeError:
                pass
            try:
                self.create(path, data, makepath=True, acl=acl)
                return 0
            except ZkNodeExistsError:
                continue
