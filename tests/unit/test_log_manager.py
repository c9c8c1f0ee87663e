"""LogManager: loading, clean-shutdown marker, recovery, periodic tasks on a task.Clock."""

from __future__ import annotations

import os

import msgpack
import pytest
from logtools import START_MS, make_batch, offsets_of, raw_batch, topic_config
from twisted.internet import task

from kafkalite.config import BrokerConfig
from kafkalite.errors import InvalidTopicError, KafkaStorageError, UnsupportedLogFormatError
from kafkalite.log import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    LogManager,
    LogSegment,
    read_checkpoint,
)
from kafkalite.record import compress
from kafkalite.record.legacy import is_msgpack_batch

DAY = 24 * 3600 * 1000


def _clock(ms=START_MS):
    clock = task.Clock()
    clock.advance(ms / 1000)
    return clock


def _manager(dirs, clock, **kw):
    config = kw.pop("config", topic_config(segment_bytes=600))
    kw.setdefault("retention_check_interval_ms", 1000)
    kw.setdefault("flush_check_interval_ms", 500)
    kw.setdefault("checkpoint_interval_ms", 2000)
    return LogManager([str(d) for d in dirs], config, clock, **kw)


def test_start_stop_and_clean_restart(tmp_path, monkeypatch):
    clock = _clock()
    manager = _manager([tmp_path], clock)
    manager.startService()
    log = manager.get_or_create_log("my-topic-with-dashes", 3)
    assert log.dir == str(tmp_path / "my-topic-with-dashes-3")
    for _ in range(10):
        log.append(make_batch(2, value_size=50))
    expected = offsets_of(log.read(0, 10**9).records)
    manager.stopService()
    assert os.path.exists(tmp_path / CLEAN_SHUTDOWN_FILE)
    assert read_checkpoint(str(tmp_path / RECOVERY_POINT_CHECKPOINT)) == {
        ("my-topic-with-dashes", 3): 20}
    assert read_checkpoint(str(tmp_path / LOG_START_OFFSET_CHECKPOINT)) == {
        ("my-topic-with-dashes", 3): 0}

    monkeypatch.setattr(LogSegment, "recover", lambda self: pytest.fail("recovery ran"))
    again = _manager([tmp_path], clock)
    again.startService()
    assert not os.path.exists(tmp_path / CLEAN_SHUTDOWN_FILE)
    assert str(tmp_path) in again.clean_shutdown_dirs
    log = again.get_log("my-topic-with-dashes", 3)
    assert log is not None and offsets_of(log.read(0, 10**9).records) == expected
    assert [lg.name for lg in again.all_logs()] == ["my-topic-with-dashes-3"]
    again.stopService()


def test_unclean_restart_recovers(tmp_path):
    clock = _clock()
    manager = _manager([tmp_path], clock)
    manager.startService()
    log = manager.get_or_create_log("t", 0)
    for _ in range(10):
        log.append(make_batch(2, value_size=50))
    expected = offsets_of(log.read(0, 10**9).records)
    last_file = log.active_segment.log_path
    # a crash: no stopService, so no marker; the last write was torn
    for segment in log.segments:
        segment.close()
    with open(last_file, "r+b") as f:
        f.truncate(os.path.getsize(last_file) - 3)
    again = _manager([tmp_path], clock)
    again.startService()
    log = again.get_log("t", 0)
    assert log.recovery_truncated_bytes > 0
    assert offsets_of(log.read(0, 10**9).records) == expected[:-1]
    assert log.append(make_batch(1)).first_offset == expected[-1][0]
    again.stopService()


def test_retention_flush_and_checkpoints_run_on_the_clock(tmp_path):
    clock = _clock(START_MS + 30 * DAY)
    config = topic_config(segment_bytes=300, retention_ms=DAY, flush_ms=5000)
    manager = _manager([tmp_path], clock, config=config)
    manager.startService()
    log = manager.get_or_create_log("t", 0)
    for i in range(12):
        log.append(make_batch(2, timestamp=START_MS + i))  # a month old
    log.roll()
    fresh = log.append(make_batch(1, timestamp=START_MS + 30 * DAY))
    segments = len(log.segments)
    assert segments > 3
    clock.advance(0.5)  # flush pass: the rolled segments get flushed
    assert log.recovery_point == fresh.first_offset
    assert not os.path.exists(tmp_path / RECOVERY_POINT_CHECKPOINT)
    clock.advance(0.5)  # retention pass
    assert len(log.segments) == 1 and log.log_start_offset == fresh.first_offset
    clock.advance(1.0)  # checkpoint pass
    assert read_checkpoint(str(tmp_path / LOG_START_OFFSET_CHECKPOINT)) == {
        ("t", 0): fresh.first_offset}
    clock.advance(5.0)  # flush.ms has passed
    assert log.recovery_point == log.log_end_offset
    manager.stopService()
    assert not any(call.active() for call in clock.getDelayedCalls())


def test_kafkas_default_flush_interval_never_checks_flush_ms(tmp_path):
    """log.flush.scheduler.interval.ms defaults to Long.MAX, as in Kafka: no flush.ms checks
    (nor, by default, any flush.ms: it defaults to that interval), while rolled segments are
    still flushed within a second, as Kafka flushes them at once."""
    broker = BrokerConfig.from_dict({"broker.id": 1, "zookeeper.connect": "zk:1",
                                     "log.dirs": str(tmp_path)})
    assert broker.log_flush_scheduler_interval_ms == 2**63 - 1
    assert broker.topic_defaults().flush_ms == 2**63 - 1
    assert BrokerConfig.from_dict({"broker.id": 1, "zookeeper.connect": "zk:1",
                                   "log.flush.scheduler.interval.ms": "700"}
                                  ).topic_defaults().flush_ms == 700    # Kafka's fallback
    clock = _clock()
    manager = LogManager([str(tmp_path)], topic_config(segment_bytes=300, flush_ms=1), clock,
                         flush_check_interval_ms=broker.log_flush_scheduler_interval_ms)
    manager.startService()
    log = manager.get_or_create_log("t", 0)
    for i in range(4):
        log.append(make_batch(2, timestamp=START_MS + i))
    rolled = log.segments[-1].base_offset
    assert rolled > 0 and log.recovery_point < rolled
    clock.advance(1.0)                    # the roll flush: rolled segments only
    assert log.recovery_point == rolled < log.log_end_offset
    clock.advance(3600.0)                 # flush.ms=1 passed long ago, but nothing checks it
    assert log.recovery_point == rolled
    manager.stopService()


def test_new_logs_go_to_the_emptiest_dir(tmp_path):
    clock = _clock()
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = _manager(dirs, clock)
    manager.startService()
    for p in range(4):
        manager.get_or_create_log("t", p)
    assert sorted(manager.log_dir_of("t", p) for p in range(4)) == [str(dirs[0])] * 2 + \
        [str(dirs[1])] * 2
    manager.delete_log("t", 0)
    manager.delete_log("t", 2)
    assert manager.get_or_create_log("u", 0) is manager.get_log("u", 0)
    for p in (1, 3):
        manager.get_log("t", p).append(make_batch(1))
    manager.stopService()
    again = _manager(dirs, clock)
    again.startService()
    assert sorted((lg.topic, lg.partition) for lg in again.all_logs()) == [
        ("t", 1), ("t", 3), ("u", 0)]
    assert again.get_log("t", 1).log_end_offset == 1
    with pytest.raises(InvalidTopicError):
        again.get_or_create_log("bad/topic", 0)
    assert not again.delete_log("nope", 0)
    again.stopService()


def test_deleting_a_log_writes_nothing_into_it(tmp_path):
    """Kafka's asyncDelete renames the dir and closes the handlers: no producer snapshot or
    index write for files about to go (each cost an fsync on the reactor)."""
    clock = _clock()
    manager = _manager([tmp_path], clock)
    manager.startService()
    log = manager.get_or_create_log("t", 0)
    log.append(make_batch(2))
    log.producer_state_source = lambda: pytest.fail("a snapshot of a deleted log was taken")
    assert manager.delete_log("t", 0)
    assert not os.path.exists(log.dir) and manager.get_log("t", 0) is None
    assert [name for name in os.listdir(tmp_path) if name.startswith("t-")] == []
    manager.stopService()


def test_update_config_and_high_watermarks(tmp_path):
    clock = _clock()
    manager = _manager([tmp_path], clock)
    manager.startService()
    log = manager.get_or_create_log("t", 0, topic_config(segment_bytes=5000))
    assert log.config.segment_bytes == 5000
    manager.update_config("t", topic_config(segment_bytes=700))
    assert log.config.segment_bytes == 700
    assert manager.high_watermark_checkpoint("t", 0) == 0
    manager.write_high_watermarks({("t", 0): 42, ("elsewhere", 1): 7})
    assert read_checkpoint(str(tmp_path / REPLICATION_OFFSET_CHECKPOINT)) == {("t", 0): 42}
    manager.stopService()
    again = _manager([tmp_path], clock)
    again.startService()
    assert again.high_watermark_checkpoint("t", 0) == 42
    again.stopService()


def test_from_broker_config(tmp_path):
    broker = BrokerConfig.from_dict({"broker.id": "1", "zookeeper.connect": "zk:2181",
                                     "log.dirs": f"{tmp_path}/x,{tmp_path}/y",
                                     "log.segment.bytes": "12345"})
    manager = LogManager.from_broker_config(broker, _clock())
    assert manager.data_dirs == [f"{tmp_path}/x", f"{tmp_path}/y"]
    assert manager.default_config.segment_bytes == 12345
    assert manager.retention_check_interval_ms == 300000


def _old_msgpack_batch(rows, codec: int = 0, base_offset: int = 0) -> bytes:
    """A batch as kafkalite wrote them before Kafka's v2 records: the same 61-byte header, then
    one msgpack array of [offset_delta, timestamp_delta, key, value, headers] (4 fields when a
    record had no headers), compressed as a whole."""
    section = msgpack.packb(rows, use_bin_type=True)
    if codec:
        section = compress(codec, section)
    return raw_batch(section, count=len(rows), base_offset=base_offset, attributes=codec)


@pytest.mark.parametrize("codec", [0, 1, 4])
def test_old_msgpack_record_format_is_refused_by_name(tmp_path, codec):
    part = tmp_path / "old-topic-0"
    part.mkdir()
    old = (_old_msgpack_batch([[0, 0, b"k", b"v", [["h", b"x"]]], [1, 5, None, b"w"]], codec)
           + _old_msgpack_batch([[0, 0, None, b"z"]], codec, base_offset=2))
    (part / "00000000000000000000.log").write_bytes(old)
    (tmp_path / "fine-0").mkdir()
    (tmp_path / "fine-0" / "00000000000000000000.log").write_bytes(make_batch(3))
    manager = _manager([tmp_path], _clock())
    with pytest.raises(UnsupportedLogFormatError) as info:
        manager.load_logs()
    message = str(info.value)
    assert f"log dir {part} holds batches in kafkalite's old msgpack record format" in message
    assert "delete the directory or keep the old kafkalite" in message
    assert isinstance(info.value, KafkaStorageError)
    (part / "00000000000000000000.log").unlink()  # the way out the message names
    manager = _manager([tmp_path], _clock())
    manager.load_logs()
    assert manager.get_log("fine", 0).log_end_offset == 3
    manager.stopService()


def test_undecodable_records_that_are_not_msgpack_still_load(tmp_path):
    """Only the old format is refused; other damage is for recovery and the readers to report."""
    part = tmp_path / "t-0"
    part.mkdir()
    data = raw_batch(b"x" * 20) + make_batch(2, base_offset=1)
    (part / "00000000000000000000.log").write_bytes(data)
    assert not is_msgpack_batch(raw_batch(b"x" * 20)) and not is_msgpack_batch(make_batch(2))
    manager = _manager([tmp_path], _clock())
    manager.load_logs()
    assert manager.get_log("t", 0).log_end_offset == 3
    manager.stopService()


def test_new_logs_dir_fsyncs_batched_once_per_dir(tmp_path, monkeypatch):
    import kafkalite.log.manager as manager_module

    synced = []
    monkeypatch.setattr(manager_module, "fsync_dir", synced.append)
    a, b = tmp_path / "a", tmp_path / "b"
    manager = _manager([a, b], _clock())
    manager.get_or_create_log("t", 0)
    assert synced == [str(a)]                 # outside a batch: at once, per log
    synced.clear()
    with manager.dir_syncs_batched():
        with manager.dir_syncs_batched():     # nested: the outer block syncs
            for partition in range(1, 6):
                manager.get_or_create_log("t", partition)
        assert synced == []
        assert all(manager.get_log("t", p) is not None for p in range(6))
    assert synced == [str(a), str(b)]         # once per dir that got a log
    synced.clear()
    manager.get_or_create_log("t", 9)
    assert len(synced) == 1                   # per log again after the block


def test_one_live_dir_takes_every_new_log(tmp_path):
    manager = _manager([tmp_path / "only"], _clock())
    for partition in range(3):
        assert manager.get_or_create_log("t", partition).dir.startswith(str(tmp_path / "only"))
