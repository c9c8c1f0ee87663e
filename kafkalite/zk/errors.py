"""ZooKeeper failures as kafkalite errors: nothing outside kafkalite.zk ever sees a kazoo type.

Every class here is a :class:`kafkalite.errors.ZooKeeperError`, so ``except ZooKeeperError`` catches
them all; the subclasses say what went wrong when a caller has something specific to do about it.
"""

from __future__ import annotations

from kafkalite.errors import NotControllerError, ZooKeeperError


class ZkNoNodeError(ZooKeeperError):
    """The znode does not exist."""
    name = "ZK_NO_NODE"
    retriable = False


class ZkNodeExistsError(ZooKeeperError):
    """The znode already exists (for an ephemeral one: owned by another session)."""
    name = "ZK_NODE_EXISTS"
    retriable = False


class ZkBadVersionError(ZooKeeperError):
    """A conditional write found another zkVersion: someone else wrote first. Re-read and retry."""
    name = "ZK_BAD_VERSION"
    retriable = False


class ZkNotEmptyError(ZooKeeperError):
    """The znode still has children."""
    name = "ZK_NOT_EMPTY"
    retriable = False


class ZkConnectionLossError(ZooKeeperError):
    """No answer from ZooKeeper (disconnected or timed out); the operation may or may not have
    happened. The session may still be alive."""
    name = "ZK_CONNECTION_LOSS"
    retriable = True


class ZkNoAuthError(ZooKeeperError):
    """The znode's ZooKeeper ACL does not allow this client the operation (NoAuthError): with
    zookeeper.set.acl=true only the cluster's ZooKeeper identity may write."""
    name = "ZK_NO_AUTH"
    retriable = False


class ZkSessionExpiredError(ZooKeeperError):
    """The session expired: its ephemeral znodes and watches are gone."""
    name = "ZK_SESSION_EXPIRED"
    retriable = True


class ZkClientClosedError(ZooKeeperError):
    """The client was stopped (or never started)."""
    name = "ZK_CLIENT_CLOSED"
    retriable = False


class ControllerMovedError(NotControllerError, ZooKeeperError):
    """A controller write was fenced: ``/controller_epoch`` moved on, another broker is controller.

    Answers on the wire as NOT_CONTROLLER (Kafka's ControllerMovedException).
    """
    code = None
    name = "CONTROLLER_MOVED"
    retriable = False
    description = "Another broker became controller (the controller epoch moved on)"


__all__ = [
    "ZooKeeperError", "ZkNoNodeError", "ZkNodeExistsError", "ZkBadVersionError", "ZkNotEmptyError",
    "ZkConnectionLossError", "ZkSessionExpiredError", "ZkClientClosedError", "ControllerMovedError",
]
