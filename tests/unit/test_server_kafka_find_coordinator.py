"""FindCoordinator on the Kafka protocol: advertised, answered COORDINATOR_NOT_AVAILABLE.

librdkafka decides whether a broker reads LZ4 batches from its ApiVersions answer: its LZ4
feature depends on FindCoordinator v0 (both came with Kafka 0.8.2). Without that API in the list
it sends every ``compression.type=lz4`` batch uncompressed (tests/integration/
test_kafka_cross_clients.py checks the stored codec with the real client).
"""

from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.versions import supported_versions
from kafkalite.server.kafka_apis import KafkaProtocolApis

FIND_COORDINATOR = 10


def test_find_coordinator_v0_is_advertised():
    low, high = supported_versions()[FIND_COORDINATOR]
    assert low == 0 and high == 3          # Kafka 2.8's range; v4 (batched keys) came with 3.0


def test_every_version_answers_coordinator_not_available():
    apis = KafkaProtocolApis.__new__(KafkaProtocolApis)   # the answer needs no broker state
    for version in range(4):
        payload = codec.encode_response(FIND_COORDINATOR, version, 42,
                                        apis.find_coordinator(None, version, None))
        correlation_id, body = codec.decode_response(FIND_COORDINATOR, version, payload)
        assert correlation_id == 42
        assert int(body.error_code) == 15                     # COORDINATOR_NOT_AVAILABLE
        assert (body.node_id, body.host, body.port) == (-1, "", -1)
