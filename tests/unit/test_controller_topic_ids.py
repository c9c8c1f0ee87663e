"""The controller gives a topic id to a topic whose znode has none, as Kafka 2.8's does.

``kafka-topics --zookeeper --create`` (Kafka's AdminZkClient) writes ``/brokers/topics/<t>``
without a ``topic_id``; Kafka 2.8's controller then creates one and writes it back, so Metadata
v10+, UpdateMetadata and a ZooKeeper describe all show it. Without it kafkalite served such a
topic with the zero id (kafka-topics --describe printed no TopicId). Found by Kafka's own
kafka-topics in tests/tools/test_tool_topics.py.
"""

import zk_schema

from controller_fakes import ControllerHarness


def _create_without_id(h, topic, partitions):
    h.admin.ensure_path(zk_schema.TOPICS_PATH)
    h.admin.create(zk_schema.topic_path(topic),
                   zk_schema.TopicAssignment(partitions=partitions).encode())


def _topic_id(h, topic):
    data, _ = h.admin.get_data(zk_schema.topic_path(topic))
    return zk_schema.TopicAssignment.decode(data).topic_id


def test_a_new_topic_without_an_id_gets_one_written_and_sent():
    h = ControllerHarness(brokers=(1, 2, 3))
    controller, _ = h.controller(1)
    controller.channels.clear()

    _create_without_id(h, "z", {0: (1, 2), 1: (2, 3)})
    h.settle()
    topic_id = _topic_id(h, "z")
    assert topic_id and len(topic_id) == 22
    assert controller.context.topic_ids["z"] == topic_id
    assert controller.context.assignments["z"] == {0: (1, 2), 1: (2, 3)}
    assert h.state("z", 0).leader == 1 and h.state("z", 1).leader == 2
    updates = controller.channels.requests("UpdateMetadataRequest", 3)
    assert updates and {s.topic_id for u in updates for s in u.partition_states} == {topic_id}


def test_a_topic_without_an_id_found_at_failover_gets_one_and_an_id_is_kept():
    h = ControllerHarness(brokers=(1, 2, 3))
    _create_without_id(h, "old", {0: (1, 2)})
    h.admin.create_topic("new", {0: (2, 3)})
    kept = _topic_id(h, "new")
    controller, _ = h.controller(1)
    h.settle()
    given = _topic_id(h, "old")
    assert given and given != kept
    assert _topic_id(h, "new") == kept
    assert controller.context.topic_ids == {"old": given, "new": kept}
