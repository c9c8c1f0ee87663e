"""DescribeLogDirs for the admin client: each asked broker's data directories and the replicas
in them, as Kafka's Admin.describeLogDirs gives them (a broker answers for itself, so the
request goes to every broker asked, not to the controller)."""

from __future__ import annotations

from typing import Iterable, NamedTuple

from kafkalite import errors
from kafkalite.client.structs import TopicPartition
from kafkalite.errors import KafkaError
from kafkalite.protocol import messages as m

__all__ = ["ReplicaInfo", "LogDirDescription", "describe_log_dirs"]


class ReplicaInfo(NamedTuple):
    size: int               # bytes of the replica's log segments
    offset_lag: int         # behind the high watermark (a future replica: the current log)
    is_future: bool         # a copy AlterReplicaLogDirs is making in this dir


class LogDirDescription(NamedTuple):
    error: KafkaError | None          # KafkaStorageError for an offline dir
    replicas: dict[TopicPartition, ReplicaInfo]


def describe_log_dirs(admin, broker_ids: Iterable[int] | None = None
                      ) -> dict[int, dict[str, LogDirDescription]]:
    """``{broker id: {log dir: LogDirDescription}}`` of the given brokers (all live brokers
    when None), in the order asked. A broker the cluster does not know, or one that cannot be
    reached, raises its error."""
    admin._check_open()
    if broker_ids is None:
        broker_ids = sorted(admin._cluster.refresh(topics=[]).brokers)
    described = {}
    for broker_id in broker_ids:
        snap = admin._cluster.maybe_refresh()
        if broker_id not in snap.brokers:
            raise errors.BrokerNotAvailableError(f"broker {broker_id} is not in the cluster")
        answer = admin._pool.get(broker_id).request(m.DescribeLogDirsRequest(topics=None))
        described[broker_id] = {
            d.log_dir: LogDirDescription(
                errors.for_code(d.error_code) if d.error_code else None,
                {TopicPartition(t.topic, p.partition): ReplicaInfo(p.size, p.offset_lag,
                                                                   p.is_future)
                 for t in d.topics for p in t.partitions})
            for d in answer.results}
    return described
