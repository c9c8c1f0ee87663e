"""FindCoordinator's broker side (server/coordinator_lookup.py) and its Kafka-protocol answer.

The coordinator of a group is the leader of its ``__consumer_offsets`` partition; the first
lookup creates the topic; until a leader is known the answer is COORDINATOR_NOT_AVAILABLE. The
empty group id is looked up like any other; an unknown key type is INVALID_REQUEST.
librdkafka also needs FindCoordinator advertised to compress with LZ4 (see
``protocol.kafka.versions``).
"""

from types import SimpleNamespace

from kafkalite.coordinator.types import OFFSETS_TOPIC
from kafkalite.protocol import messages as m
from kafkalite.server.api_table import kafka_ranges as supported_versions
from kafkalite.server.coordinator_lookup import find_coordinator
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.server.metadata_cache import MetadataCache

from pipeline_driver import connect, kafka_frame, read_kafka_responses

FIND_COORDINATOR = 10


class FakeStore:
    def __init__(self):
        self.created = 0

    def ensure_topic(self):
        self.created += 1

    def partition_for(self, group_id):
        return 7 if group_id == "billing" else 0


def broker_with(leader_of_7=None, store=True):
    cache = MetadataCache(1)
    if leader_of_7 is not None:
        cache.update(m.UpdateMetadataRequest(
            controller_id=1, controller_epoch=1,
            partition_states=[m.UpdateMetadataPartitionState(
                OFFSETS_TOPIC, p, 1, leader_of_7 if p == 7 else 1, 0, [1], 0, [1], [])
                for p in range(8)],
            live_brokers=[m.UpdateMetadataBroker(1, "10.0.0.1", 9092),
                          m.UpdateMetadataBroker(2, "10.0.0.2", 9092, None,
                                                 ["INTERNAL://b2:9092", "EXTERNAL://h:19093"])]))
    return SimpleNamespace(metadata_cache=cache, offsets_store=FakeStore() if store else None)


def result(d):
    out = []
    d.addCallback(out.append)
    assert out, "the lookup should answer at once"
    return out[0]


def test_the_leader_of_the_groups_offsets_partition_on_the_clients_listener():
    broker = broker_with(leader_of_7=2)
    assert result(find_coordinator(broker, "billing", 0, "EXTERNAL"))[:4] == (0, 2, "h", 19093)
    assert result(find_coordinator(broker, "billing", 0, "INTERNAL"))[:4] == (0, 2, "b2", 9092)
    assert result(find_coordinator(broker, "other", 0))[:4] == (0, 1, "10.0.0.1", 9092)


def test_the_first_lookup_creates_the_offsets_topic_and_asks_to_retry():
    broker = broker_with()
    answer = result(find_coordinator(broker, "billing"))
    assert answer.error_code == 15 and "being created" in answer.error_message
    assert broker.offsets_store.created == 1


def test_no_leader_no_coordinator_transactions_and_unknown_key_types_are_refused():
    assert result(find_coordinator(broker_with(leader_of_7=-1), "billing")).error_code == 15
    assert result(find_coordinator(broker_with(leader_of_7=2), "billing", 1)).error_code == 15
    assert result(find_coordinator(broker_with(leader_of_7=2), "billing", 2)).error_code == 42
    assert result(find_coordinator(broker_with(store=False), "billing")).error_code == 15


def test_the_empty_group_id_has_a_coordinator_as_in_kafka():
    assert result(find_coordinator(broker_with(leader_of_7=2), ""))[:4] == (
        0, 1, "10.0.0.1", 9092)


def test_every_advertised_version_encodes_the_answer():
    """Through the API table and the connection pipeline (server/group_apis.py's handler)."""
    low, high = supported_versions()[FIND_COORDINATOR]
    assert (low, high) == (0, 3)          # Kafka 2.8's range; v4 (batched keys) came with 3.0
    broker = broker_with(leader_of_7=2)
    broker.security = None                # no authorizer
    for version in range(low, high + 1):
        protocol, transport = connect(ApiDispatcher(broker))
        protocol.dataReceived(kafka_frame(FIND_COORDINATOR, version, 42,
                                          {"key": "billing", "key_type": 0}))
        [(correlation_id, body)] = read_kafka_responses(transport, [(FIND_COORDINATOR, version)])
        assert correlation_id == 42 and int(body.error_code) == 0
        assert (body.node_id, body.host, body.port) == (2, "10.0.0.2", 9092)
