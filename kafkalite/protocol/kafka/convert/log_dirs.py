"""DescribeLogDirs and AlterReplicaLogDirs between Kafka's protocol and the model."""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter

__all__ = ["DESCRIBE_LOG_DIRS", "ALTER_REPLICA_LOG_DIRS"]


def _describe_log_dirs_request(entity, version: int) -> m.DescribeLogDirsRequest:
    if entity.topics is None:            # null: every partition of the broker
        return m.DescribeLogDirsRequest(topics=None)
    return m.DescribeLogDirsRequest(topics=[
        m.DescribeLogDirsTopic(str(t.topic), [int(p) for p in t.partitions])
        for t in entity.topics])


def _describe_log_dirs_response(r: m.DescribeLogDirsResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "results": [
        {"error_code": d.error_code, "log_dir": d.log_dir, "topics": [
            {"name": t.topic, "partitions": [
                {"partition_index": p.partition, "partition_size": p.size,
                 "offset_lag": p.offset_lag, "is_future_key": p.is_future}
                for p in t.partitions]}
            for t in d.topics]}
        for d in r.results]}


DESCRIBE_LOG_DIRS = Converter(_describe_log_dirs_request, _describe_log_dirs_response)


def _alter_replica_log_dirs_request(entity, version: int) -> m.AlterReplicaLogDirsRequest:
    return m.AlterReplicaLogDirsRequest(dirs=[
        m.AlterReplicaLogDir(d.path, [m.AlterReplicaLogDirTopic(str(t.name),
                                                                [int(p) for p in t.partitions])
                                      for t in d.topics])
        for d in entity.dirs])


def _alter_replica_log_dirs_response(r: m.AlterReplicaLogDirsResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "results": [
        {"topic_name": t.topic, "partitions": [
            {"partition_index": p.partition, "error_code": p.error_code} for p in t.partitions]}
        for t in r.results]}


ALTER_REPLICA_LOG_DIRS = Converter(_alter_replica_log_dirs_request,
                                   _alter_replica_log_dirs_response)
