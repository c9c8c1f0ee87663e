"""FindCoordinator, for both protocols: which broker coordinates a group.

The coordinator of group g is the leader of ``__consumer_offsets`` partition
``abs(javaHash(g)) % offsets.topic.num.partitions``, as Kafka computes it. The first lookup
creates the topic (Kafka creates it there too), and is answered COORDINATOR_NOT_AVAILABLE until
the partition has a leader; clients retry. Transaction coordinators do not exist in kafkalite.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from twisted.internet import defer

from kafkalite import errors
from kafkalite.coordinator.types import OFFSETS_TOPIC

log = logging.getLogger(__name__)

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


class CoordinatorAddress(NamedTuple):
    error_code: int
    node_id: int = -1
    host: str = ""
    port: int = -1
    error_message: str | None = None


def _not_available(message: str) -> CoordinatorAddress:
    return CoordinatorAddress(errors.CoordinatorNotAvailableError.code, error_message=message)


def find_coordinator(broker, key: str, key_type: int = GROUP_KEY_TYPE,
                     listener_name: str | None = None) -> defer.Deferred:
    """A Deferred firing with the CoordinatorAddress of ``key``'s coordinator."""
    if key_type != GROUP_KEY_TYPE:
        return defer.succeed(_not_available(
            "kafkalite has no transaction coordinator: transactions are not supported"))
    if not key:
        return defer.succeed(CoordinatorAddress(errors.InvalidGroupIdError.code,
                                                error_message="the group id is empty"))
    store = getattr(broker, "offsets_store", None)
    if store is None:
        return defer.succeed(_not_available("this broker has no group coordinator"))
    metadata = broker.metadata_cache
    if not metadata.contains(OFFSETS_TOPIC):
        d = defer.maybeDeferred(store.ensure_topic)
        d.addErrback(lambda f: log.warning("cannot create %s: %s", OFFSETS_TOPIC,
                                           f.getErrorMessage()))
        return d.addCallback(lambda _: _not_available(f"{OFFSETS_TOPIC} is being created"))
    partition = store.partition_for(key)
    leader = metadata.leader_of(OFFSETS_TOPIC, partition)
    endpoint = metadata.brokers.get(leader)
    if endpoint is None:
        return defer.succeed(_not_available(
            f"{OFFSETS_TOPIC}-{partition} has no live leader"))
    host, port = endpoint.address(listener_name)
    return defer.succeed(CoordinatorAddress(0, leader, host, port))
