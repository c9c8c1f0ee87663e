"""ZooKeeper's own ACLs on kafkalite's znodes (Kafka's ``zookeeper.set.acl=true``).

Brokers and tools identify themselves to ZooKeeper with the digest scheme (``user:password``):
a stock ZooKeeper, Debian's standalone one included, has it without any server setup, where SASL
needs a JAAS file and a restart of ZooKeeper. The identity comes from ``zookeeper.auth.digest``
(brokers) or ``KAFKALITE_ZOOKEEPER_AUTH_DIGEST`` / ``--zk-auth-digest`` (the CLI and
AdminClient). A client that has an identity creates znodes with Kafka's secure ACL: its own
identity may do everything, everyone may read (``zk_schema.secure_paths`` says where that
differs: credentials are not world-readable, ``/consumers`` stays open).

``secure_zk_client`` gives ZkClient the identity (kazoo's ``auth_data``) and the default ACL; a
sensitive znode is created with its narrower ACL from the start (``sensitive_acl``), so
credentials are never world-readable, not even for a moment.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from kazoo.security import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from zk_schema import secure_paths

from kafkalite.errors import ConfigError
from kafkalite.zk.client import DEFAULT_CONNECTION_TIMEOUT_S, DEFAULT_SESSION_TIMEOUT_MS, \
    ZkClient
from kafkalite.zk.errors import ZkNoAuthError, ZkNoNodeError

log = logging.getLogger(__name__)

__all__ = ["secure_zk_client", "secure_persistent_paths", "restrict_if_sensitive",
           "get_acls", "describe_acl", "DIGEST_ENV", "default_digest"]

DIGEST_ENV = "KAFKALITE_ZOOKEEPER_AUTH_DIGEST"
SECURE_ACL = CREATOR_ALL_ACL + READ_ACL_UNSAFE
_ACLS = {secure_paths.SECURE: SECURE_ACL, secure_paths.SENSITIVE: CREATOR_ALL_ACL,
         secure_paths.OPEN: OPEN_ACL_UNSAFE}


def default_digest() -> str | None:
    """The CLI's and AdminClient's ZooKeeper identity, from the environment."""
    return os.environ.get(DIGEST_ENV) or None


def _check_digest(digest: str) -> str:
    user, sep, password = digest.partition(":")
    if not sep or not user or not password:
        raise ConfigError("a ZooKeeper digest identity looks like user:password "
                          "(zookeeper.auth.digest, or KAFKALITE_ZOOKEEPER_AUTH_DIGEST)")
    return digest


def secure_zk_client(connect_string: str, session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
                     reactor: Any = None,
                     connection_timeout_s: float = DEFAULT_CONNECTION_TIMEOUT_S,
                     digest: str | None = None, set_acl: bool | None = None) -> ZkClient:
    """A ZkClient that authenticates with ``digest`` (default: the environment's) and, when
    ``set_acl`` (default: whenever it has an identity), creates znodes with the secure ACL."""
    digest = digest if digest is not None else default_digest()
    if set_acl is None:
        set_acl = bool(digest)
    if set_acl and not digest:
        raise ConfigError("zookeeper.set.acl=true needs this cluster's ZooKeeper identity: set "
                          "zookeeper.auth.digest=<user>:<password>")
    return ZkClient(connect_string, session_timeout_ms, reactor=reactor,
                    connection_timeout_s=connection_timeout_s,
                    auth_data=[("digest", _check_digest(digest))] if digest else (),
                    default_acl=SECURE_ACL if set_acl else None)


def sensitive_acl(zk, path: str):
    """The ACL ``path`` is created with by this client: the narrower one for a sensitive znode
    (credentials) when the client creates secure znodes at all; None (the default) otherwise."""
    if not getattr(zk, "default_acl", None):
        return None
    return _ACLS[secure_paths.SENSITIVE] if (
        secure_paths.acl_kind(path) == secure_paths.SENSITIVE) else None


def secure_persistent_paths(zk: ZkClient, set_acl: bool) -> None:
    """With zookeeper.set.acl: lock the chroot itself (made open by whoever created it) and
    keep ``/consumers`` open, as Kafka does. Blocking."""
    if not set_acl:
        return
    for path, acl in (("/", SECURE_ACL), (secure_paths.OPEN_PATHS[0], OPEN_ACL_UNSAFE)):
        try:
            if zk.get_acls(path) != list(acl):
                zk.set_acls(path, acl)
        except ZkNoNodeError:
            continue
        except ZkNoAuthError:
            log.warning("cannot set the ACL of %s: another ZooKeeper identity owns it", path)


def restrict_if_sensitive(zk, path: str) -> None:
    """After writing ``path``: a sensitive znode (credentials) loses world-read, when the
    client creates secure znodes at all. Blocking; a no-op for other clients."""
    acl = sensitive_acl(zk, path)
    if acl is not None:
        zk.set_acls(path, acl)


def get_acls(zk, path: str) -> list:
    """kazoo's ACL objects of ``path`` (for ``kafkalite zk``)."""
    return zk.get_acls(path)


def describe_acl(acl) -> str:
    """``digest:kafka:Hd4...=:cdrwa`` / ``world:anyone:r``, as zkCli's getAcl spells them."""
    letters = "".join(letter for bit, letter in ((4, "c"), (8, "d"), (1, "r"), (2, "w"),
                                                 (16, "a")) if acl.perms & bit)
    return f"{acl.id.scheme}:{acl.id.id}:{letters}"
