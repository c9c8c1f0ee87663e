"""DescribeProducers (KIP-664) between Kafka's protocol and the model.

Kafka 2.8 serves v0 only (flexible). The model's fields are the schema's, so both directions are
a field-for-field copy; the answer's per-partition ``error_message`` stays null, as Kafka's.
"""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter

__all__ = ["DESCRIBE_PRODUCERS"]


def _request(entity, version: int) -> m.DescribeProducersRequest:
    return m.DescribeProducersRequest(topics=[
        m.DescribeProducersTopic(str(t.name), [int(p) for p in t.partition_indexes])
        for t in entity.topics])


def _response(r: m.DescribeProducersResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "topics": [
        {"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": p.error_code,
             "error_message": p.error_message, "active_producers": [
                 {"producer_id": s.producer_id, "producer_epoch": s.producer_epoch,
                  "last_sequence": s.last_sequence, "last_timestamp": s.last_timestamp,
                  "coordinator_epoch": s.coordinator_epoch,
                  "current_txn_start_offset": s.current_txn_start_offset}
                 for s in p.active_producers]}
            for p in t.partitions]}
        for t in r.topics]}


DESCRIBE_PRODUCERS = Converter(_request, _response)
