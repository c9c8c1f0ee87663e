"""bench/scale_sim_probe.py: a Metadata v1 answer (written and read back by kio, as the bench
reads a broker's) condensed into counts, the conditions the phases wait for, and the table."""

from __future__ import annotations

import os
import sys

from kio.schema.errors import ErrorCode
from kio.schema.metadata.v1 import response as r
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32

from kafkalite.protocol.kafka import codec

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

from scale_sim_probe import Figure, View, read_figures, table  # noqa: E402


def _partition(index: int, leader: int, replicas: tuple, isr: tuple):
    return r.MetadataResponsePartition(
        error_code=ErrorCode.none, partition_index=i32(index), leader_id=BrokerId(leader),
        replica_nodes=tuple(BrokerId(b) for b in replicas),
        isr_nodes=tuple(BrokerId(b) for b in isr))


def _answer(topics: dict[str, list]) -> bytes:
    response = r.MetadataResponse(
        brokers=tuple(r.MetadataResponseBroker(node_id=BrokerId(b), host="10.77.0.10",
                                               port=i32(9092), rack=None) for b in (1, 2, 3)),
        controller_id=BrokerId(2),
        topics=tuple(r.MetadataResponseTopic(error_code=ErrorCode.none, name=TopicName(name),
                                             is_internal=False, partitions=tuple(parts))
                     for name, parts in topics.items()))
    return codec.encode_response(3, 1, 7, response)     # a frame payload: header and body


def _view(topics: dict[str, list]) -> View:
    correlation_id, entity = codec.decode_response(3, 1, _answer(topics))
    assert correlation_id == 7
    return View.of(entity)


def test_view_counts_the_bench_topics_only():
    view = _view({
        "scale-000": [_partition(0, 1, (1, 2, 3), (1, 2, 3)),
                      _partition(1, 2, (2, 3, 1), (2, 3)),
                      _partition(2, -1, (3, 1, 2), ())],
        "other": [_partition(0, 3, (3,), (3,))],
    })
    assert view.brokers == {1, 2, 3}
    assert view.controller == 2
    assert view.partitions == 3
    assert dict(view.leaders) == {1: 1, 2: 1, -1: 1}
    assert view.full_isr == 1


def test_conditions():
    led = _view({"scale-000": [_partition(0, 1, (1, 2, 3), (1, 2, 3)),
                               _partition(1, 3, (3, 1, 2), (3, 1))]})
    assert led.all_led(2, [1, 2, 3])
    assert not led.all_led(2, [1, 2])           # partition 1 led by broker 3, not live
    assert not led.all_led(3, [1, 2, 3])        # a partition not listed yet
    assert not led.settled(2, [1, 2, 3])        # partition 1's ISR lacks broker 2
    full = _view({"scale-000": [_partition(0, 1, (1, 2, 3), (1, 2, 3))]})
    assert full.settled(1, [1])


def test_table_ratio_and_missing_figures():
    figures = [Figure("kafkalite", "start", "start", 10.0, 3.0),
               Figure("kafka", "start", "start", 40.0, 5.0),
               Figure("kafkalite", "restart", "restart", 12.0, 2.0),
               Figure("kafka", "restart", "restart", None, 9.0, note="JVM out of memory"),
               Figure("kafkalite", "rss", "memory", 700.0, 1.0, unit="MB")]
    text = table(figures)
    assert "| start | 10.0 s (load 3.0) | 40.0 s (load 5.0) | ×0.25 |" in text
    assert "| restart | 12.0 s (load 2.0) | not reached | - |" in text
    assert "| memory | 700.0 MB (load 1.0) | not run | - |" in text
    assert "- kafka, restart: JVM out of memory" in text


def test_json_lines_read_back(tmp_path):
    path = tmp_path / "figures.jsonl"
    written = [Figure("kafka", "create", "create", 61.5, 30.2, note="slow"),
               Figure("kafkalite", "rss", "memory", 900.0, 3.0, unit="MB")]
    path.write_text("".join(f.json_line({"partitions": 10}) + "\n" for f in written))
    assert read_figures(str(path)) == [
        Figure("kafka", "create", "create", 61.5, 30.2, "slow", "s"),
        Figure("kafkalite", "rss", "memory", 900.0, 3.0, "", "MB")]
