"""kafkalite/jvm_hashing.py against what the JVM itself printed (jshell over Kafka 2.8.2's
scala-library-2.13.5 and kafka-clients jars): a java.util.HashMap of TopicPartitions put in the
order below, the Scala mutable.HashMap that ``asScala(...).filter`` makes of it (what
kafka-log-dirs prints from), and a Java map of log dir paths."""

from __future__ import annotations

from kafkalite.jvm_hashing import (java_hash_map_order, java_string_hash,
                                     scala_hash_map_order, topic_partition_hash)

KEYS = [(t, i) for t in ("orders", "tu-dirs-ab12cd34", "x") for i in range(7)]
JAVA = ("tu-dirs-ab12cd34-0, x-6, x-5, x-4, x-3, x-2, tu-dirs-ab12cd34-2, x-1, orders-0, "
        "tu-dirs-ab12cd34-1, x-0, orders-1, tu-dirs-ab12cd34-4, orders-2, tu-dirs-ab12cd34-3, "
        "orders-3, tu-dirs-ab12cd34-6, orders-4, tu-dirs-ab12cd34-5, orders-5, orders-6")
SCALA = ("tu-dirs-ab12cd34-0, x-6, x-5, x-4, x-3, x-2, x-1, tu-dirs-ab12cd34-2, orders-0, x-0, "
         "tu-dirs-ab12cd34-1, orders-1, tu-dirs-ab12cd34-4, orders-2, tu-dirs-ab12cd34-3, "
         "orders-3, tu-dirs-ab12cd34-6, orders-4, tu-dirs-ab12cd34-5, orders-5, orders-6")


def _tp_hash(key):
    return topic_partition_hash(*key)


def _names(keys):
    return ", ".join(f"{t}-{p}" for t, p in keys)


def test_hashes_are_javas():
    assert java_string_hash("") == 0
    assert java_string_hash("orders") == -1008770331          # "orders".hashCode()
    assert java_string_hash("é") == 233
    assert topic_partition_hash("orders", 3) == 31 * (31 + 3) + java_string_hash("orders")


def test_java_and_scala_map_orders_are_the_jvms():
    java = java_hash_map_order(KEYS, _tp_hash)
    assert _names(java) == JAVA
    assert _names(scala_hash_map_order(java, _tp_hash)) == SCALA


def test_java_map_order_of_log_dir_paths():
    dirs = ["/tmp/a/dir-a", "/tmp/a/dir-b", "/data/kafka-1-data", "/var/lib/k"]
    assert java_hash_map_order(dirs, java_string_hash) == [
        "/data/kafka-1-data", "/tmp/a/dir-a", "/tmp/a/dir-b", "/var/lib/k"]


def test_small_int_keys_iterate_ascending():
    assert scala_hash_map_order([3, 1, 2], int) == [1, 2, 3]
