"""Which coordinator a consumer gets: one of the two generations of Kafka's consumer groups
(docs/architecture.md, 9. Consumer groups), or none, from the consumer's settings:

* ``group_id`` alone: the brokers' group coordinator (Kafka 0.9+, what every Kafka client uses):
  ``broker_coordinator.BrokerCoordinator``;
* ``group_id`` with ``zookeeper``: Kafka 0.8's ZooKeeper groups (``/consumers/<g>/ids``, owners,
  offsets): ``zk_coordinator.ZooKeeperCoordinator``;
* no ``group_id``: ``coordinator.InMemoryCoordinator``, a group of one.

A module of its own because it knows every kind, while each kind knows only the ``Coordinator``
interface (``coordinator``).
"""

from __future__ import annotations

from kafkalite.client.coordinator import Coordinator, InMemoryCoordinator
from kafkalite.client.zk_coordinator import ZooKeeperCoordinator

__all__ = ["consumer_group_options", "make_coordinator"]


def make_coordinator(group_id: str | None, zookeeper=None, **options) -> Coordinator:
    """The coordinator for a consumer's ``group_id``/``zookeeper`` settings: ZooKeeper group
    membership when both are given, the brokers' group coordinator for a ``group_id`` alone
    (``options`` are BrokerCoordinator's: ``cluster`` or ``bootstrap_servers``, ``assignors``,
    timeouts), a group of one (offsets in memory) without a group."""
    if zookeeper is not None and group_id is not None:
        return ZooKeeperCoordinator(group_id, zookeeper, **options)
    if group_id is not None:
        # imported here, not above: it loads kio's group protocol schemas, which import
        # hypothesis (seconds under load), and consumers without a broker group never need them
        from kafkalite.client.broker_coordinator import BrokerCoordinator

        return BrokerCoordinator(group_id, **options)
    return InMemoryCoordinator(group_id)


def consumer_group_options(group_id, zookeeper, cluster, client_id: str, strategy,
                           session_timeout_ms: int | None, heartbeat_interval_ms: int,
                           max_poll_interval_ms: int, group_instance_id: str | None,
                           request_timeout_ms: int, retry_backoff_ms: int,
                           default_api_timeout_ms: int, rebalance_max_retries: int,
                           rebalance_backoff_ms: int, rebalance_debounce_ms: int) -> dict:
    """``make_coordinator``'s options from a Consumer's settings (kafka-python's names): the
    ZooKeeper kind's, the broker kind's, or none without a group. The session timeouts default
    as each generation's did: 6 s for ZooKeeper groups, 10 s for the brokers' coordinator."""
    if isinstance(strategy, str):
        strategy = (strategy,)
    if group_id is None:
        return {}
    if zookeeper is not None:
        return dict(assignor=strategy[0],
                    session_timeout_ms=6000 if session_timeout_ms is None else session_timeout_ms,
                    rebalance_max_retries=rebalance_max_retries,
                    rebalance_backoff_ms=rebalance_backoff_ms,
                    rebalance_debounce_ms=rebalance_debounce_ms, client_id=client_id)
    return dict(cluster=cluster, client_id=client_id, assignors=strategy,
                session_timeout_ms=10000 if session_timeout_ms is None else session_timeout_ms,
                heartbeat_interval_ms=heartbeat_interval_ms,
                max_poll_interval_ms=max_poll_interval_ms, group_instance_id=group_instance_id,
                request_timeout_ms=request_timeout_ms, retry_backoff_ms=retry_backoff_ms,
                default_api_timeout_ms=default_api_timeout_ms)
