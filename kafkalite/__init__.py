"""kafkalite: the classic ZooKeeper-coordinated Apache Kafka architecture, rebuilt in Python.

The clients users need are importable from here (``from kafkalite import Producer, Consumer``);
they load lazily so that ``import kafkalite`` stays cheap for the broker and the CLI.
"""

__version__ = "0.1.0"

_CLIENT_NAMES = ("Producer", "Consumer", "AdminClient", "TopicPartition", "ConsumerRecord",
                 "RecordMetadata", "OffsetAndMetadata", "OffsetAndTimestamp", "NewTopic",
                 "NewPartitions", "ConsumerGroupMetadata")

__all__ = list(_CLIENT_NAMES) + ["__version__"]


def __getattr__(name):
    if name in _CLIENT_NAMES:
        from kafkalite import client

        return getattr(client, name)
    raise AttributeError(f"module 'kafkalite' has no attribute {name!r}")
