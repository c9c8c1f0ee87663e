"""The 0.9+ group coordinator on the brokers (docs/architecture.md, 9. Consumer groups), beside
the 0.8 ZooKeeper groups.

``types`` holds the values its parts share; ``records`` the ``__consumer_offsets`` key and value
schemas (Kafka's, byte for byte); ``group`` the pure group state machine; ``coordinator`` the
GroupCoordinator (join, sync, heartbeat, leave, offsets) on an injected reactor; ``log_store``
the reads and writes of ``__consumer_offsets`` through the ReplicaManager.
"""
