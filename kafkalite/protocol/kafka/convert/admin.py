"""CreateTopics, DeleteTopics, CreatePartitions and DeleteRecords between Kafka's protocol and the
model.

Per version (kio's schemas, Kafka 2.8's ranges): timeouts are kio timedeltas (``millis``);
CreateTopics v5+ answers KIP-525's counts and configs (and v7 a topic id, none here: kafkalite
answers the zero id, as before); DeleteTopics v6 names its topics in ``topics``, by name or by
id, where v1-v5 send ``topic_names``.
"""

from __future__ import annotations

import base64
import uuid

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter
from kafkalite.protocol.kafka.entities import millis

__all__ = ["CREATE_TOPICS", "DELETE_TOPICS", "CREATE_PARTITIONS", "DELETE_RECORDS",
           "topic_id_text"]


def topic_id_text(value: uuid.UUID | None) -> str | None:
    """A kio topic id as kafkalite keeps ids (base64url without padding, as ZooKeeper and
    Kafka's ``Uuid.toString``); None for the zero id ("no id")."""
    if value is None or value.int == 0:
        return None
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


# --- CreateTopics (19) ---------------------------------------------------------------------------

def _create_topics_request(entity, version: int) -> m.CreateTopicsRequest:
    return m.CreateTopicsRequest(
        topics=[m.CreatableTopic(
            t.name, t.num_partitions, t.replication_factor,
            {a.partition_index: list(a.broker_ids) for a in t.assignments},
            {c.name: c.value for c in t.configs}) for t in entity.topics],
        timeout_ms=millis(entity.timeout),
        validate_only=bool(getattr(entity, "validate_only", False)))


def _create_topics_response(r: m.CreateTopicsResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "topics": [{
        "name": t.name, "topic_id": None, "error_code": t.error_code,
        "error_message": t.error_message,
        "topic_config_error_code": t.topic_config_error_code,
        "num_partitions": t.num_partitions, "replication_factor": t.replication_factor,
        "configs": [{"name": c.name, "value": c.value, "read_only": c.read_only,
                     "config_source": c.config_source, "is_sensitive": c.is_sensitive}
                    for c in t.configs]} for t in r.topics]}


CREATE_TOPICS = Converter(_create_topics_request, _create_topics_response)


# --- DeleteTopics (20) ---------------------------------------------------------------------------

def _delete_topics_request(entity, version: int) -> m.DeleteTopicsRequest:
    names = list(getattr(entity, "topic_names", None) or ())
    ids = []
    for t in getattr(entity, "topics", None) or ():        # v6
        if t.name is not None:
            names.append(t.name)          # a name wins over an id given with it
        elif topic_id_text(t.topic_id) is not None:
            ids.append(topic_id_text(t.topic_id))
    return m.DeleteTopicsRequest(topic_names=names, topic_ids=ids,
                                 timeout_ms=millis(entity.timeout))


def _delete_topics_response(r: m.DeleteTopicsResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "responses": [
        {"name": t.name, "topic_id": t.topic_id, "error_code": t.error_code,
         "error_message": t.error_message} for t in r.responses]}


DELETE_TOPICS = Converter(_delete_topics_request, _delete_topics_response)


# --- CreatePartitions (37) -----------------------------------------------------------------------

def _create_partitions_request(entity, version: int) -> m.CreatePartitionsRequest:
    return m.CreatePartitionsRequest(
        topics=[m.CreatePartitionsTopic(
            t.name, t.count,
            None if t.assignments is None else [list(a.broker_ids) for a in t.assignments])
            for t in entity.topics],
        timeout_ms=millis(entity.timeout), validate_only=bool(entity.validate_only))


def _create_partitions_response(r: m.CreatePartitionsResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "results": [
        {"name": t.name, "error_code": t.error_code, "error_message": t.error_message}
        for t in r.results]}


CREATE_PARTITIONS = Converter(_create_partitions_request, _create_partitions_response)


# --- DeleteRecords (21) --------------------------------------------------------------------------

def _delete_records_request(entity, version: int) -> m.DeleteRecordsRequest:
    return m.DeleteRecordsRequest(
        topics=[m.DeleteRecordsTopic(t.name, [m.DeleteRecordsPartition(p.partition_index,
                                                                       p.offset)
                                              for p in t.partitions])
                for t in entity.topics],
        timeout_ms=millis(entity.timeout))


def _delete_records_response(r: m.DeleteRecordsResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "topics": [{
        "name": t.topic,
        "partitions": [{"partition_index": p.partition, "low_watermark": p.low_watermark,
                        "error_code": p.error_code} for p in t.partitions]}
        for t in r.topics]}


DELETE_RECORDS = Converter(_delete_records_request, _delete_records_response)
