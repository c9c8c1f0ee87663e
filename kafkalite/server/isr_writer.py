"""A leader's ISR changes, written to its partitions' state znodes (ZooKeeper mode: the leader
writes, then tells the controller through ``/isr_change_notification``).

Each change is a conditional write at the zkVersion the leader holds. The changes asked for in
one reactor turn go out together, pipelined (``set_partition_states``): a broker that rejoins
makes every leader expand thousands of ISRs at once, and one blocking write per partition on the
broker's few ZooKeeper threads took N/4 round trips and queued ahead of the controller's calls.

One write per partition at a time (Kafka's pending ISR state): while a partition's write is queued
or under way, further changes asked for it are dropped. Every fetch of a follower that caught up
asks again until the write lands, and each extra write would carry the zkVersion the first one
replaces and could only fail (thousands of them once held the ZooKeeper threads for 15 s). The
next fetch or shrink check after the write asks again if a change is still needed.
"""

from __future__ import annotations

import logging
from typing import Callable

import zk_schema

log = logging.getLogger(__name__)


class IsrWriter:
    """``request(partition, new_isr)`` queues a write; ``on_written(partition, new_isr,
    zk_version)`` hears each one that landed while the partition is still the one led.
    ``deferred_zk`` is a callable giving the broker's TwistedZk (it exists once the broker
    started)."""

    def __init__(self, reactor, deferred_zk: Callable, is_current: Callable,
                 on_written: Callable):
        self._reactor = reactor
        self._deferred_zk = deferred_zk
        self._is_current = is_current     # (partition) -> still this broker's led partition?
        self._on_written = on_written
        self._queued: dict = {}           # tp -> (partition, new_isr), for the next batch
        self._in_flight: set = set()      # tps queued or being written
        self._flush_call = None

    def request(self, partition, new_isr) -> None:
        tp = partition.tp
        if tp in self._in_flight:
            return
        self._in_flight.add(tp)
        self._queued[tp] = (partition, list(new_isr))
        if self._flush_call is None:
            self._flush_call = self._reactor.callLater(0, self._flush)

    def _flush(self) -> None:
        self._flush_call = None
        batch, self._queued = self._queued, {}
        updates = {tp: (zk_schema.PartitionState(p.leader_id, p.leader_epoch,
                                                 p.controller_epoch, tuple(isr)), p.zk_version)
                   for tp, (p, isr) in batch.items()}
        d = self._deferred_zk().set_partition_states(updates)
        d.addCallbacks(self._written, self._all_failed, callbackArgs=(batch, updates),
                       errbackArgs=(batch, updates))

    def _written(self, results, batch, updates) -> None:
        for tp, (partition, new_isr) in batch.items():
            self._in_flight.discard(tp)
            outcome = results.get(tp)
            if isinstance(outcome, Exception) or outcome is None:
                self._failed(tp, new_isr, updates[tp][1], outcome)
            elif self._is_current(partition):
                log.info("%s-%d: ISR now %s", tp[0], tp[1], new_isr)
                self._on_written(partition, new_isr, outcome)

    def _all_failed(self, failure, batch, updates) -> None:
        for tp, (_partition, new_isr) in batch.items():
            self._in_flight.discard(tp)
            self._failed(tp, new_isr, updates[tp][1], failure.value)

    @staticmethod
    def _failed(tp, new_isr, expected, error) -> None:
        # the error's name too: ZooKeeper's errors (BadVersion: the controller or another
        # leader wrote since; SessionExpired: a zombie) mostly carry no message
        # (the wording is the one operators and tests/system/test_zombie_controller.py read)
        log.info("%s-%d: ISR update to %s not written (%s: %s; at zkVersion %d); the "
                 "controller's view wins", tp[0], tp[1], new_isr, type(error).__name__, error,
                 expected)
