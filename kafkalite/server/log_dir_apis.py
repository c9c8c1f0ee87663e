"""The log-dir APIs (KIP-113), as Kafka 2.8's KafkaApis and ReplicaManager answer them; every
broker answers for itself (the admin client asks each broker, not the controller).

* DescribeLogDirs: what each of this broker's data directories holds. Without Describe on the
  cluster the answer is empty: no directories and no error, as Kafka's.
* AlterReplicaLogDirs: move replicas to other data dirs of this broker
  (``server.replica_alter_log_dirs``). Without Alter on the cluster every partition answers
  CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import os

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType

__all__ = ["handle_describe_log_dirs", "describe_log_dirs", "INVALID_OFFSET_LAG",
           "handle_alter_replica_log_dirs"]

#: the lag of a log whose partition this broker does not host (Kafka's INVALID_OFFSET_LAG)
INVALID_OFFSET_LAG = -1


def handle_describe_log_dirs(broker, ctx, request: m.DescribeLogDirsRequest):
    if not ctx.authz.may(ApiKey.DESCRIBE_LOG_DIRS, ResourceType.CLUSTER):
        return m.DescribeLogDirsResponse()
    log_manager = broker.log_manager
    if request.topics is None:            # Kafka's allLogs: current and future ones
        wanted = set(log_manager.logs) | set(log_manager.future_logs)
    else:
        wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
    return m.DescribeLogDirsResponse(
        results=describe_log_dirs(log_manager, broker.replica_manager.partitions, wanted))


def describe_log_dirs(log_manager, partitions, wanted) -> list[m.DescribeLogDirsResult]:
    """One result per configured data dir (``log.dirs`` order, each once, absolute): an offline
    dir answers KAFKA_STORAGE_ERROR; an online one lists every topic it has a log of, with the
    ``wanted`` partitions among them (so a topic none of whose partitions is wanted is listed
    with no partitions, as Kafka's)."""
    by_dir: dict[str, list] = {}
    for tp, log_ in log_manager.logs.items():
        by_dir.setdefault(log_manager.log_dir_of(*tp), []).append((tp, log_, False))
    for tp, log_ in log_manager.future_logs.items():
        by_dir.setdefault(log_.parent_dir, []).append((tp, log_, True))
    results = []
    for data_dir in dict.fromkeys(log_manager.data_dirs):
        path = os.path.abspath(data_dir)
        if not log_manager.is_log_dir_online(data_dir):
            results.append(m.DescribeLogDirsResult(errors.KafkaStorageError.code, path, []))
            continue
        topics: dict[str, list[m.DescribeLogDirsPartition]] = {}
        for tp, log_, future in sorted(by_dir.get(data_dir, ()), key=lambda e: (e[0], e[2])):
            described = topics.setdefault(tp[0], [])
            if tp in wanted:
                lag = _offset_lag(tp, log_.log_end_offset, future, partitions)
                described.append(m.DescribeLogDirsPartition(tp[1], log_.size, lag, future))
        results.append(m.DescribeLogDirsResult(
            errors.NONE, path,
            [m.DescribeLogDirsTopicResult(t, ps) for t, ps in topics.items()]))
    return results


def _offset_lag(tp, log_end_offset: int, future: bool, partitions) -> int:
    """Kafka's ReplicaManager.getLogEndOffsetLag: a current log lags its high watermark (never
    below 0), a future log the current log's end; -1 when the partition is not hosted here."""
    partition = partitions.get(tp)
    if partition is None:
        return INVALID_OFFSET_LAG
    if future:
        return partition.log_end_offset - log_end_offset
    return max(partition.high_watermark - log_end_offset, 0)


def handle_alter_replica_log_dirs(broker, ctx, request: m.AlterReplicaLogDirsRequest):
    if not ctx.authz.may(ApiKey.ALTER_REPLICA_LOG_DIRS, ResourceType.CLUSTER):
        return request.error_response(errors.ClusterAuthorizationFailedError.code)
    partition_dirs = {}            # a partition named twice goes where it was named last
    for log_dir in request.dirs:
        for topic in log_dir.topics:
            for partition in topic.partitions:
                partition_dirs[(topic.topic, partition)] = log_dir.path
    results = broker.replica_manager.alter_log_dirs.alter(partition_dirs)
    by_topic: dict[str, list[m.AlterReplicaLogDirPartitionResult]] = {}
    for (topic, partition), code in results.items():
        by_topic.setdefault(topic, []).append(m.AlterReplicaLogDirPartitionResult(partition, code))
    return m.AlterReplicaLogDirsResponse(
        results=[m.AlterReplicaLogDirTopicResult(t, ps) for t, ps in by_topic.items()])
