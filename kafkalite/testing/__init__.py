"""What kafkalite's own tests (and users' tests) use on top of the local cluster: the pytest
plugin and its fixtures, Apache Kafka 2.8.2 beside kafkalite (``apache_kafka``), the conformance
suite, the fault fixtures (``faults``) and the ZooKeeper layout comparison.

The ZooKeeper and broker launchers themselves (``ZooKeeperServer``, ``start_zookeeper``,
``LocalCluster``, ``free_port``, ...) are in :mod:`kafkalite.local`, which the product uses too.
This package stays cheap to import: the pytest plugin loads in every pytest run.
"""
