"""FindCoordinator, for both protocols: which broker coordinates a group or a transactional id.

The coordinator of group g is the leader of ``__consumer_offsets`` partition
``abs(javaHash(g)) % offsets.topic.num.partitions``, as Kafka computes it; that of transactional
id t the leader of ``__transaction_state`` partition
``abs(javaHash(t)) % transaction.state.log.num.partitions``. The first lookup creates the topic
(Kafka creates it there too), and is answered COORDINATOR_NOT_AVAILABLE until the partition has
a leader; clients retry. A key type other than group (0) or transaction (1) is INVALID_REQUEST;
the empty group id is looked up like any other.
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

_INVALID_REQUEST_MESSAGE = (
    "This most likely occurs because of a request being malformed by the client library or "
    "the message was sent to an incompatible broker. See the broker logs for more details.")


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
    if key_type == TRANSACTION_KEY_TYPE:
        coordinator = getattr(broker, "txn_coordinator", None)
        store = None if coordinator is None else coordinator.state.topic_log
        if store is None:
            return defer.succeed(_not_available("this broker has no transaction coordinator"))
        return _lookup(broker, store, store.topic, key, listener_name)
    if key_type != GROUP_KEY_TYPE:
        # Kafka's CoordinatorType.forId refuses it; the answer carries INVALID_REQUEST's
        # standard message, as Kafka's error response does
        return defer.succeed(CoordinatorAddress(errors.InvalidRequestError.code,
                                                error_message=_INVALID_REQUEST_MESSAGE))
    # the empty group id has a coordinator too (partition 0, as javaHash("") is 0): Kafka 2.8
    # keeps it for old clients' offset commits; JoinGroup and the like refuse it there
    store = getattr(broker, "offsets_store", None)
    if store is None:
        return defer.succeed(_not_available("this broker has no group coordinator"))
    return _lookup(broker, store, OFFSETS_TOPIC, key, listener_name)


def _lookup(broker, store, topic: str, key: str, listener_name: str | None) -> defer.Deferred:
    """The leader of ``key``'s partition of the coordinator topic ``topic``; ``store`` places
    keys (``partition_for``) and creates the topic (``ensure_topic``)."""
    metadata = broker.metadata_cache
    if not metadata.contains(topic):
        d = defer.maybeDeferred(store.ensure_topic)
        d.addErrback(lambda f: log.warning("cannot create %s: %s", topic, f.getErrorMessage()))
        return d.addCallback(lambda _: _not_available(f"{topic} is being created"))
    partition = store.partition_for(key)
    leader = metadata.leader_of(topic, partition)
    endpoint = metadata.brokers.get(leader)
    if endpoint is None:
        return defer.succeed(_not_available(f"{topic}-{partition} has no live leader"))
    host, port = endpoint.address(listener_name)
    # Kafka answers Errors.NONE.message(), "NONE", as the message of a found coordinator
    return defer.succeed(CoordinatorAddress(0, leader, host, port, "NONE"))
