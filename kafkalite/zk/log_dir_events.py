"""Log dir event notifications in ZooKeeper (Kafka's propagateLogDirEvent and the controller's
reads), as blocking operations on a :class:`~kafkalite.zk.client.ZkClient`.

They live beside ``client.py`` rather than in it; call them through the bridge from the reactor:
``deferred_zk.run(create_log_dir_event_notification, zk, broker_id)``.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Iterable

import zk_schema
from zk_schema import log_dir_events as s_events

from kafkalite.zk.client import ZkClient, ZkDelete
from kafkalite.zk.errors import ZkNoNodeError

log = logging.getLogger(__name__)


def create_log_dir_event_notification(zk: ZkClient, broker_id: int) -> str:
    """Announce that a log dir of ``broker_id`` failed; returns the sequential znode's name."""
    data = s_events.LogDirEventNotification(broker_id).encode()
    try:
        path = zk.create(s_events.log_dir_event_prefix_path(), data, sequence=True)
    except ZkNoNodeError:   # not among the persistent paths every broker creates at start
        zk.ensure_path(s_events.LOG_DIR_EVENT_NOTIFICATION_PATH)
        path = zk.create(s_events.log_dir_event_prefix_path(), data, sequence=True)
    return path.rsplit("/", 1)[-1]


def get_log_dir_event_notifications(zk: ZkClient
                                    ) -> dict[str, s_events.LogDirEventNotification]:
    """{child name: notification}, in sequence order (vanished or malformed ones left out)."""
    out = {}
    for name in zk.get_children(s_events.LOG_DIR_EVENT_NOTIFICATION_PATH):
        got = zk.get_data(s_events.log_dir_event_path(name))
        if got is None:
            continue
        try:
            out[name] = s_events.LogDirEventNotification.decode(got[0], got[1])
        except zk_schema.SchemaError:
            log.warning("ignoring malformed log dir event notification %s", name)
    return out


def delete_log_dir_event_notifications(zk: ZkClient, names: Iterable[str],
                                       controller_epoch_zk_version: int | None = None) -> None:
    """Delete handled notifications; with ``controller_epoch_zk_version``, fenced on the
    controller epoch (a deposed controller deletes nothing)."""
    for name in names:
        path = s_events.log_dir_event_path(name)
        if controller_epoch_zk_version is None:
            zk.delete(path)
        else:
            with contextlib.suppress(ZkNoNodeError):
                zk.fenced_multi(controller_epoch_zk_version, [ZkDelete(path)])
