"""The broker's reaction to a failed log dir: Kafka's LogDirFailureHandler, on the reactor.

It takes each dir the ``LogDirFailureChannel`` reports (once per dir) and

1. has the replica manager stop the dir's partitions -- fetchers, leadership, waiting requests --
   and the log manager close the dir's logs without writing (``handle_log_dir_failure``);
2. halts the broker (exit status 1) when no log dir is left, as Kafka does: a broker without
   storage has nothing to serve, and the end of its ZooKeeper session moves leadership away;
3. otherwise writes ``/log_dir_event_notification/log_dir_event_<seq>``, so the controller learns
   which replicas are offline (it asks with LeaderAndIsr, they answer KAFKA_STORAGE_ERROR) and
   elects other in-sync replicas. The write is retried until it succeeds or the broker stops.

The channel may hand a dir over inside the very append (or fetch) that failed, so the work runs
on the next reactor turn, never in that call. Dirs that failed while the logs loaded at startup
wait in the channel and are handled as soon as the handler starts.
"""

from __future__ import annotations

import logging
import os
from typing import Callable

from twisted.internet import defer, task

from kafkalite.zk.log_dir_events import create_log_dir_event_notification

log = logging.getLogger(__name__)


def halt_broker(status: int) -> None:
    """Exit at once, as Kafka's Exit.halt: no shutdown hooks, no clean-shutdown markers."""
    logging.shutdown()
    os._exit(status)


class LogDirFailureHandler:
    def __init__(self, channel, replica_manager, announce: Callable[[], defer.Deferred],
                 reactor, halt: Callable[[int], None] = halt_broker,
                 retry_backoff_s: float = 1.0):
        self.channel = channel
        self.replica_manager = replica_manager
        self.announce = announce            # () -> Deferred: write the ZooKeeper notification
        self.reactor = reactor
        self.halt = halt
        self.retry_backoff_s = retry_backoff_s
        self.handled: list[str] = []        # dirs taken offline, in order
        self.announced: list[str] = []      # dirs whose notification was written
        self._running = False
        self._waiting: defer.Deferred | None = None
        self._call = None

    @classmethod
    def for_broker(cls, broker) -> "LogDirFailureHandler":
        """The handler of a BrokerService (its log manager's channel, its ZooKeeper session)."""
        def announce() -> defer.Deferred:
            return broker.deferred_zk.run(create_log_dir_event_notification, broker.zk,
                                  broker.broker_id)
        return cls(broker.log_manager.failure_channel, broker.replica_manager, announce,
                   broker.reactor)

    def start(self) -> None:
        if not self._running:
            self._running = True
            self._wait()

    def stop(self) -> None:
        self._running = False
        if self._waiting is not None:
            waiting, self._waiting = self._waiting, None
            waiting.cancel()
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None

    def _wait(self) -> None:
        if not self._running:
            return
        self._waiting = self.channel.take_next_offline_log_dir()
        self._waiting.addCallbacks(self._taken, lambda f: f.trap(defer.CancelledError))

    def _taken(self, data_dir: str) -> None:
        self._waiting = None
        self._call = self.reactor.callLater(0, self._handle, data_dir)

    def _handle(self, data_dir: str) -> None:
        self._call = None
        if not self._running:
            return
        try:
            offline = self.replica_manager.handle_log_dir_failure(data_dir)
        except Exception:  # noqa: BLE001 - the dir is offline regardless; tell the controller
            log.exception("stopping the replicas of the failed log dir %s failed", data_dir)
            offline = []
        self.handled.append(data_dir)
        log_manager = self.replica_manager.log_manager
        if not log_manager.live_dirs:
            log.critical("halting the broker: all its log dirs (%s) have failed",
                         ", ".join(log_manager.data_dirs))
            self.halt(1)
            return
        log.warning("log dir %s is offline with %d partition(s); still serving %s", data_dir,
                    len(offline), ", ".join(log_manager.live_dirs))
        self._announce(data_dir).addBoth(lambda _: self._wait())

    @defer.inlineCallbacks
    def _announce(self, data_dir: str):
        failures = 0
        while self._running:
            try:
                name = yield self.announce()
            except Exception as exc:  # noqa: BLE001 - ZooKeeper unreachable for now: retry
                failures += 1
                (log.warning if failures == 1 else log.debug)(
                    "cannot write the log dir event notification for %s (%s); retrying every "
                    "%.1f s", data_dir, exc, self.retry_backoff_s)
                yield task.deferLater(self.reactor, self.retry_backoff_s, lambda: None)
                continue
            self.announced.append(data_dir)
            log.info("log dir failure of %s announced to the controller (%s)", data_dir, name)
            return
