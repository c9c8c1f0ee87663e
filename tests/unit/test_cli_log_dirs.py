"""``kafkalite log-dirs``' report (cli/log_dirs.py), alone: Kafka's kafka-log-dirs JSON from
the admin client's answer (the tool against real brokers: tests/tools/test_tool_log_dirs.py)."""

from __future__ import annotations

import json

from kafkalite import errors
from kafkalite.cli.log_dirs import java_error_name, report
from kafkalite.client.admin_log_dirs import LogDirDescription, ReplicaInfo
from kafkalite.client.structs import TopicPartition


def test_errors_are_named_as_kafkas_exception_classes():
    assert java_error_name(None) is None
    assert java_error_name(errors.KafkaStorageError()) == (
        "org.apache.kafka.common.errors.KafkaStorageException")
    assert java_error_name(errors.for_code(-1)) == (
        "org.apache.kafka.common.errors.UnknownServerException")


def test_report_is_kafkas_json_with_the_topics_asked():
    described = {
        2: {"/d/a": LogDirDescription(None, {
            TopicPartition("t", 1): ReplicaInfo(10, 0, False),
            TopicPartition("t", 0): ReplicaInfo(20, 0, False),
            TopicPartition("u", 0): ReplicaInfo(5, 0, False)}),
            "/d/b": LogDirDescription(errors.KafkaStorageError(), {})},
        1: {"/d/c": LogDirDescription(None, {TopicPartition("t", 0): ReplicaInfo(7, 3, True)})}}
    assert json.dumps(report(described, {"t"}), separators=(",", ":")) == (
        '{"version":1,"brokers":['
        '{"broker":1,"logDirs":[{"logDir":"/d/c","error":null,"partitions":['
        '{"partition":"t-0","size":7,"offsetLag":3,"isFuture":true}]}]},'
        '{"broker":2,"logDirs":['
        '{"logDir":"/d/a","error":null,"partitions":['
        '{"partition":"t-1","size":10,"offsetLag":0,"isFuture":false},'
        '{"partition":"t-0","size":20,"offsetLag":0,"isFuture":false}]},'
        '{"logDir":"/d/b","error":"org.apache.kafka.common.errors.KafkaStorageException",'
        '"partitions":[]}]}]}')
    every = report(described, set())
    assert [p["partition"] for p in every["brokers"][1]["logDirs"][0]["partitions"]] == [
        "t-1", "t-0", "u-0"]              # Scala's HashMap order (kafkalite/jvm_hashing.py)
