"""ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments between Kafka's
protocol and the model.

Per version (kio's schemas, Kafka 2.8's ranges): ElectLeaders v0 has no election type (always
preferred) and no top-level error code; ``topic_partitions`` null means every partition. The
reassignment APIs have only v0: a null replica list cancels a partition's reassignment, null
``topics`` lists every reassignment. Timeouts are kio timedeltas (``millis``).
"""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter
from kafkalite.protocol.kafka.entities import millis

__all__ = ["ELECT_LEADERS", "ALTER_PARTITION_REASSIGNMENTS", "LIST_PARTITION_REASSIGNMENTS"]


# --- ElectLeaders (43) ---------------------------------------------------------------------------

def _elect_leaders_request(entity, version: int) -> m.ElectLeadersRequest:
    topics = entity.topic_partitions
    return m.ElectLeadersRequest(
        election_type=int(getattr(entity, "election_type", m.ELECTION_PREFERRED)),
        topic_partitions=None if topics is None else [
            m.ElectLeadersTopic(t.topic, [int(p) for p in t.partitions]) for t in topics],
        timeout_ms=millis(entity.timeout))


def _elect_leaders_response(r: m.ElectLeadersResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "error_code": r.error_code,
            "replica_election_results": [{
                "topic": t.topic,
                "partition_result": [{"partition_id": p.partition, "error_code": p.error_code,
                                      "error_message": p.error_message}
                                     for p in t.partitions]} for t in r.results]}


ELECT_LEADERS = Converter(_elect_leaders_request, _elect_leaders_response)


# --- AlterPartitionReassignments (45) ------------------------------------------------------------

def _alter_request(entity, version: int) -> m.AlterPartitionReassignmentsRequest:
    return m.AlterPartitionReassignmentsRequest(
        topics=[m.ReassignableTopic(t.name, [
            m.ReassignablePartition(p.partition_index,
                                    None if p.replicas is None else [int(b) for b in p.replicas])
            for p in t.partitions]) for t in entity.topics],
        timeout_ms=millis(entity.timeout))


def _alter_response(r: m.AlterPartitionReassignmentsResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "error_code": r.error_code,
            "error_message": r.error_message, "responses": [{
                "name": t.topic,
                "partitions": [{"partition_index": p.partition, "error_code": p.error_code,
                                "error_message": p.error_message} for p in t.partitions]}
                for t in r.results]}


ALTER_PARTITION_REASSIGNMENTS = Converter(_alter_request, _alter_response)


# --- ListPartitionReassignments (46) -------------------------------------------------------------

def _list_request(entity, version: int) -> m.ListPartitionReassignmentsRequest:
    topics = entity.topics
    return m.ListPartitionReassignmentsRequest(
        topics=None if topics is None else [
            m.ListReassignmentsTopic(t.name, [int(p) for p in t.partition_indexes])
            for t in topics],
        timeout_ms=millis(entity.timeout))


def _list_response(r: m.ListPartitionReassignmentsResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "error_code": r.error_code,
            "error_message": r.error_message, "topics": [{
                "name": t.topic,
                "partitions": [{"partition_index": p.partition, "replicas": list(p.replicas),
                                "adding_replicas": list(p.adding_replicas),
                                "removing_replicas": list(p.removing_replicas)}
                               for p in t.partitions]} for t in r.topics]}


LIST_PARTITION_REASSIGNMENTS = Converter(_list_request, _list_response)
