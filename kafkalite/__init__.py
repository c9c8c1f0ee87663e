"""kafkalite: the classic ZooKeeper-coordinated Apache Kafka architecture, rebuilt in Python."""

__version__ = "0.1.0"
