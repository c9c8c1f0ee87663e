"""``kafkalite configs --entity-type users``: SCRAM credentials in ZooKeeper, as Kafka 2.x's
kafka-configs --zookeeper kept them::

    kafkalite configs --zookeeper H:P/chroot --alter --entity-type users --entity-name alice \\
        --add-config 'SCRAM-SHA-512=[password=alice-secret],SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
    Completed updating config for entity: user-principal 'alice'.
    kafkalite configs --zookeeper H:P/chroot --describe --entity-type users --entity-name alice
    Configs for user-principal 'alice' are SCRAM-SHA-512=salt=...,stored_key=...,server_key=...,iterations=4096
    kafkalite configs --zookeeper H:P/chroot --alter --entity-type users --entity-name alice \\
        --delete-config SCRAM-SHA-256

The password never reaches ZooKeeper: the credential (salt, stored key, server key,
iterations) is made here. Users are written to ZooKeeper directly, which is also how the brokers'
own inter-broker user is created before the first broker starts. With zookeeper.set.acl the
ZooKeeper identity comes from --command-config (zookeeper.auth.digest) or
KAFKALITE_ZOOKEEPER_AUTH_DIGEST, and the credentials are readable by that identity alone.
"""

from __future__ import annotations

import click

from kafkalite.cli.options import CliError

__all__ = ["describe_users", "alter_user"]


def _store(zookeeper: str, digest: str | None):
    from kafkalite.errors import ZooKeeperError
    from kafkalite.zk.credentials import UserConfigZkStore
    from kafkalite.zk.znode_acls import secure_zk_client

    zk = secure_zk_client(zookeeper, session_timeout_ms=10000, connection_timeout_s=10,
                          digest=digest)
    try:
        zk.start()
    except ZooKeeperError as exc:
        raise CliError(f"cannot reach ZooKeeper at {zookeeper}: {exc}; users' SCRAM "
                       "credentials live there: pass --zookeeper HOST:PORT/chroot") from None
    return zk, UserConfigZkStore(zk)


def describe_users(zookeeper: str, digest: str | None, name: str | None) -> None:
    zk, store = _store(zookeeper, digest)
    try:
        names = [name] if name is not None else store.users()
        for user in names:
            config = store.get(user)
            shown = ",".join(f"{k}={v}" for k, v in sorted(config.items()))
            click.echo(f"Configs for user-principal '{user}' are {shown}")
    finally:
        zk.stop()


def alter_user(zookeeper: str, digest: str | None, name: str, added: dict[str, str],
               deleted: list[str]) -> None:
    from kafkalite.security.scram import (
        SCRAM_MECHANISMS, credential_from_config_value, credential_to_string,
    )

    values = {}
    for key, value in added.items():
        if key not in SCRAM_MECHANISMS:
            raise CliError(f"Invalid config(s): {key}: kafkalite keeps only SCRAM credentials "
                           f"for users ({', '.join(SCRAM_MECHANISMS)}=[password=...])",
                           exit_code=2)
        try:
            values[key] = credential_to_string(credential_from_config_value(key, value))
        except ValueError as exc:
            raise CliError(str(exc), exit_code=2) from None
    zk, store = _store(zookeeper, digest)
    try:
        current = store.get(name)
        invalid = [k for k in deleted if k not in current]
        if invalid:
            raise CliError(f"Invalid config(s): {','.join(invalid)}")
        store.alter(name, values, deleted)
    finally:
        zk.stop()
    click.echo(f"Completed updating config for entity: user-principal '{name}'.")
