"""The differences expected between kafkalite's ZooKeeper layout and Apache Kafka 2.8.2's.

Keys are :class:`kafkalite.testing.zk_layout.Difference` keys (``*`` stands for any text); values
are the reasons. ``tests/oracle/test_zookeeper_layout.py`` fails on a difference not listed here
and on an entry that no longer matches any difference, and writes ``docs/zookeeper-layout.md``.
"""

from __future__ import annotations

EXPECTED_DIFFERENCES: dict[str, str] = {
    "data * kafkalite=empty kafka=null": (
        "kafkalite bug, issue 24: container znodes (no payload of their own) hold empty data in "
        "kafkalite and null in Kafka. kazoo writes b\"\" for the parents it makes "
        "(ensure_path, makepath) and its transactions take bytes only, while Kafka's client "
        "creates them with null. Nothing reads these znodes' data (Kafka only lists their "
        "children), so a Kafka broker or tool on kafkalite's tree is not affected."),
    "value /latest_producer_id_block block_start": (
        "When blocks are taken: each Kafka 2.8 broker takes a block of 1000 producer ids at "
        "start-up (its transaction coordinator's ProducerIdManager is built eagerly), so 3 "
        "brokers leave block 2000-2999. A kafkalite broker takes its first block on the first "
        "InitProducerId, so the scenario's one idempotent producer leaves block 0-999. The "
        "payload's fields and types are the same."),
    "value /latest_producer_id_block block_end": (
        "As block_start: Kafka's three brokers took blocks at start-up, kafkalite's one broker "
        "on the first InitProducerId."),
}
