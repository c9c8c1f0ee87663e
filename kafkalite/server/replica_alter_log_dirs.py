"""Moving replicas between this broker's data dirs (KIP-113's AlterReplicaLogDirs), as Kafka 2.8's
ReplicaManager.alterReplicaLogDirs and ReplicaAlterLogDirsThread do it.

``alter`` answers the request per partition: a hosted replica gets a future log in the
destination dir (``log.future_logs``); one not hosted yet gets the destination remembered for
when it is created, and REPLICA_NOT_AVAILABLE (UNKNOWN_TOPIC_OR_PARTITION when the cluster does
not have the partition either, as Kafka's unhandled exception answers it).

The copy runs on the reactor, a bounded chunk per partition per tick, while the replica goes on
serving from its current log: whole batches are read from the current log at the future log's
end and appended with their offsets (and leader epochs) unchanged, as the alter-dirs thread
fetches from the local replica. Before each chunk the future log is checked against the current
one: if the current log was truncated (a follower's truncation, a new leader) the batch ending
the future log is no longer the current log's, and the copy starts over; if the current log
start moved past the future log's end (retention, DeleteRecords), the future log restarts there.
When the future log has reached the current log end the two are swapped in the same reactor
call, so no append can slip in between (Kafka takes the partition's lock for it).
"""

from __future__ import annotations

import logging

from twisted.internet import task

from kafkalite import errors
from kafkalite.errors import code_of
from kafkalite.record.header import iter_headers

__all__ = ["ReplicaAlterLogDirs", "COPY_INTERVAL_S", "COPY_BYTES_PER_TICK"]

log = logging.getLogger(__name__)

#: how often the copy runs, and how much of each partition one tick copies
COPY_INTERVAL_S = 0.05
COPY_BYTES_PER_TICK = 4 * 1024 * 1024
#: Kafka refuses a future directory name longer than this (KAFKA-4893)
MAX_DIR_NAME = 255
_FUTURE_NAME_EXTRA = len(".") + 32 + len("-future")


class ReplicaAlterLogDirs:
    def __init__(self, replica_manager, log_manager, reactor,
                 interval_s: float = COPY_INTERVAL_S, chunk_bytes: int = COPY_BYTES_PER_TICK):
        self.replica_manager = replica_manager
        self.log_manager = log_manager
        self.reactor = reactor
        self.interval_s = interval_s
        self.chunk_bytes = chunk_bytes
        self._loop: task.LoopingCall | None = None

    def start(self) -> None:
        self._loop = task.LoopingCall(self.copy_step)
        self._loop.clock = self.reactor
        d = self._loop.start(self.interval_s, now=False)
        d.addErrback(lambda f: log.error("log dir mover stopped: %s", f.getTraceback()))

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    # --- the request ------------------------------------------------------------------------------
    def alter(self, partition_dirs: dict) -> dict:
        """``{(topic, partition): absolute dir}`` -> ``{(topic, partition): error code}``."""
        return {tp: self._alter_one(tp, path) for tp, path in partition_dirs.items()}

    def _alter_one(self, tp, path: str) -> int:
        manager = self.log_manager
        try:
            if len(f"{tp[0]}-{tp[1]}") + _FUTURE_NAME_EXTRA > MAX_DIR_NAME:
                raise errors.InvalidTopicError("The topic name is too long.")
            data_dir = manager.configured_dir(path)
            if not manager.is_log_dir_online(data_dir):
                raise errors.KafkaStorageError(f"Log directory {path} is offline")
            if manager.is_offline_log(*tp):
                raise errors.KafkaStorageError(f"Partition {tp[0]}-{tp[1]} is offline")
            future = manager.get_future_log(*tp)
            if future is not None and future.parent_dir != data_dir:
                manager.remove_future_log(tp)       # redirected: the old copy goes
            manager.maybe_update_preferred_log_dir(tp, data_dir)
            partition = self.replica_manager.partitions.get(tp)
            if partition is None:
                # Kafka's getPartitionOrException: NOT_LEADER_OR_FOLLOWER (answered as
                # REPLICA_NOT_AVAILABLE) for a partition the cluster has, else an unknown one
                if not self.replica_manager.partition_known(*tp):
                    raise errors.UnknownTopicOrPartitionError(
                        f"{tp[0]}-{tp[1]} is unknown: it will be created in {path}")
                raise errors.ReplicaNotAvailableError(
                    f"broker {self.replica_manager.broker_id} has no replica of "
                    f"{tp[0]}-{tp[1]} yet: it will be created in {path}")
            if manager.log_dir_of(*tp) != data_dir and manager.get_future_log(*tp) is None:
                manager.create_future_log(tp, data_dir)
                log.info("%s-%d: moving from %s to %s", tp[0], tp[1], manager.log_dir_of(*tp),
                         data_dir)
            return errors.NONE
        except (errors.InvalidTopicError, errors.LogDirNotFoundError,
                errors.ReplicaNotAvailableError, errors.KafkaStorageError) as exc:
            log.warning("unable to alter the log dir of %s-%d: %s", tp[0], tp[1], exc)
            return code_of(exc)
        except Exception as exc:  # noqa: BLE001 - answered per partition, as Kafka's
            log.exception("error while changing the log dir of %s-%d", *tp)
            return code_of(exc)

    # --- the copy ---------------------------------------------------------------------------------
    def copy_step(self) -> None:
        for tp, future in self.log_manager.future_logs.items():
            partition = self.replica_manager.partitions.get(tp)
            if partition is None or future.closed:
                continue            # not hosted (yet): the copy waits for the replica
            try:
                self._copy(tp, partition, future)
            except Exception:  # noqa: BLE001 - the next tick tries again
                log.exception("moving %s-%d to %s failed", tp[0], tp[1], future.parent_dir)

    def _copy(self, tp, partition, future) -> None:
        current = partition.log
        if not _same_history(current, future):
            log.info("%s-%d: the current log changed under the copy: starting it over at %d",
                     tp[0], tp[1], current.log_start_offset)
            future.truncate_fully_and_start_at(current.log_start_offset)
        elif (future.log_end_offset < current.log_start_offset        # retention went past it
              or future.log_start_offset > current.log_start_offset):  # it would lack the start
            future.truncate_fully_and_start_at(current.log_start_offset)
        copied = 0
        while future.log_end_offset < current.log_end_offset and copied < self.chunk_bytes:
            data = current.read(future.log_end_offset, self.chunk_bytes).records
            if not data:
                break
            first = next(iter_headers(data, verify_crc=False))[1].base_offset
            if first < future.log_end_offset:
                if future.log_end_offset > future.log_start_offset:
                    # not at a batch boundary of the current log: start over
                    future.truncate_fully_and_start_at(current.log_start_offset)
                    continue
                # the log start is inside this batch: the empty future log starts at the batch
                future.truncate_fully_and_start_at(first)
            future.append(data, assign_offsets=False)
            copied += len(data)
        if future.log_end_offset == current.log_end_offset:
            partition.log = self.log_manager.replace_current_with_future(tp)


def _same_history(current, future) -> bool:
    """Whether the future log's last batch is still the current log's batch at that offset:
    logs that agree on their last batch (same offsets, leader epoch and CRC) agree on everything
    before it, so this tells whether the current log was truncated under the copy."""
    end = future.log_end_offset
    if end <= future.log_start_offset:
        return True               # empty: nothing to disagree about
    if end > current.log_end_offset:
        return False              # the current log was truncated below the copy's end
    if end - 1 < current.log_start_offset:
        return True               # gone from the current log: the copy restarts at its start
    mine = _batch_at(future, end - 1)
    theirs = _batch_at(current, end - 1)
    return mine is not None and mine == theirs


def _batch_at(log_, offset: int) -> bytes | None:
    """The bytes of the batch holding ``offset``."""
    data = log_.read(offset, 1).records
    for position, header in iter_headers(data, verify_crc=False):
        if header.base_offset <= offset < header.next_offset:
            return bytes(data[position:position + header.size])
    return None

