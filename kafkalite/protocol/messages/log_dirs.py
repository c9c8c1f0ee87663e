"""Log dirs (KIP-113): DescribeLogDirs (35) and AlterReplicaLogDirs (34).
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages.base import Int16, Int32, Int64, Request, Response, _message


# ================================================================================================
# Log dirs (KIP-113): DescribeLogDirs (35), a broker's data directories and the replicas in them;
# AlterReplicaLogDirs (34), moving replicas between them
# ================================================================================================


class DescribeLogDirsTopic(NamedTuple):
    topic: str
    partitions: list[Int32]


class DescribeLogDirsPartition(NamedTuple):
    partition: Int32
    size: Int64                                # bytes of the log's segments
    offset_lag: Int64                          # current: max(HW - LEO, 0); future: LEO behind
    is_future: bool                            # a future log (AlterReplicaLogDirs' copy)


class DescribeLogDirsTopicResult(NamedTuple):
    topic: str
    partitions: list[DescribeLogDirsPartition]


class DescribeLogDirsResult(NamedTuple):
    error_code: Int16                          # KAFKA_STORAGE_ERROR for an offline dir
    log_dir: str                               # absolute path
    topics: list[DescribeLogDirsTopicResult]


@_message(ApiKey.DESCRIBE_LOG_DIRS)
class DescribeLogDirsRequest(Request):
    topics: list[DescribeLogDirsTopic] | None = None     # None = every partition

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse: no results at all (the response has no error field)
        return DescribeLogDirsResponse()


@_message(ApiKey.DESCRIBE_LOG_DIRS)
class DescribeLogDirsResponse(Response):
    throttle_time_ms: Int32 = 0
    results: list[DescribeLogDirsResult] = field(default_factory=list)


class AlterReplicaLogDirTopic(NamedTuple):
    topic: str
    partitions: list[Int32]


class AlterReplicaLogDir(NamedTuple):
    path: str                                  # absolute, one of the broker's log.dirs
    topics: list[AlterReplicaLogDirTopic]


class AlterReplicaLogDirPartitionResult(NamedTuple):
    partition: Int32
    error_code: Int16


class AlterReplicaLogDirTopicResult(NamedTuple):
    topic: str
    partitions: list[AlterReplicaLogDirPartitionResult]


@_message(ApiKey.ALTER_REPLICA_LOG_DIRS)
class AlterReplicaLogDirsRequest(Request):
    dirs: list[AlterReplicaLogDir] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse: one topic entry per topic of each dir, every partition
        return AlterReplicaLogDirsResponse(results=[
            AlterReplicaLogDirTopicResult(t.topic, [AlterReplicaLogDirPartitionResult(p, error_code)
                                                    for p in t.partitions])
            for d in self.dirs for t in d.topics])


@_message(ApiKey.ALTER_REPLICA_LOG_DIRS)
class AlterReplicaLogDirsResponse(Response):
    throttle_time_ms: Int32 = 0
    results: list[AlterReplicaLogDirTopicResult] = field(default_factory=list)
