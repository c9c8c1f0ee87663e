"""bench/chaos_preload.py and kill9_recovery.to_reverify: the preload's read-back check, and what
a restart after kill -9 re-verifies, counted from a log dir's files by the loader's rule."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

from chaos_preload import (LOGGED, VALUE_BYTES, RestartWatch, cpu_seconds,  # noqa: E402
                           preload_problems, preload_value, reverify_summary, startup_steps)
from kill9_recovery import to_reverify  # noqa: E402

from kafkalite import TopicPartition  # noqa: E402
from kafkalite.log.checkpoint import RECOVERY_POINT_CHECKPOINT, write_checkpoint  # noqa: E402


def test_preload_values_are_unique_and_of_one_size():
    values = {preload_value(p, n) for p in range(3) for n in range(1000)}
    assert len(values) == 3000
    assert {len(v) for v in values} == {VALUE_BYTES}


def _acked(**partitions):
    return {int(p[1:]): {o: o for o in range(n)} for p, n in partitions.items()}


def test_every_acknowledged_preload_record_at_its_offset_is_clean():
    reads = [(p, o, preload_value(p, o)) for p in (0, 1) for o in range(5)]
    assert preload_problems(_acked(p0=5, p1=5), reads) == []


def test_lost_misplaced_and_duplicated_preload_records_are_named():
    reads = [(0, 0, preload_value(0, 0)), (0, 1, preload_value(0, 2)),
             (0, 2, preload_value(0, 2))]
    problems = preload_problems(_acked(p0=3), reads)
    assert problems == ["lost: partition 0 offset 1 (record 1)",
                        f"duplicated: {preload_value(0, 2)[:24]!r} at [(0, 1), (0, 2)]"]
    moved = preload_problems(_acked(p0=1), [(0, 7, preload_value(0, 0))])
    assert moved == ["misplaced: partition 0 record 0 acknowledged at 0, read at [(0, 7)]"]


def _segment(log_dir, name, base, size):
    path = os.path.join(log_dir, name)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, f"{base:020d}.log"), "wb") as f:
        f.write(b"x" * size)


def test_to_reverify_counts_from_the_segment_holding_each_checkpointed_point(tmp_path):
    log_dir = str(tmp_path)
    for base in (0, 100, 200):          # a: three segments, its point inside the second
        _segment(log_dir, "a-0", base, 10)
    _segment(log_dir, "b-1", 0, 7)      # b-1: one segment, checkpointed at its end
    _segment(log_dir, "c-0", 0, 5)      # c-0: not in the checkpoint: from offset 0
    _segment(log_dir, "c-0.abc-delete", 0, 1000)   # not a partition dir: ignored
    write_checkpoint(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT),
                     {TopicPartition("a", 0): 150, TopicPartition("b", 1): 40})
    assert to_reverify(log_dir) == (2 + 1 + 1, 20 + 7 + 5, 30 + 7 + 5)
    assert to_reverify(log_dir, "a") == (2, 20, 30)


def test_the_loaders_line_is_recognised_and_summed():
    line = ("recovered 7 log(s) in /d/broker-1-data: re-verified 12 segment(s), 6600000 bytes, "
            "past their recovery points")
    assert LOGGED.findall(line) == [("7", "12", "6600000")]
    summary = reverify_summary([(12, 6_000_000, 6_000_000), (2, 1_000_000, 10_000_000),
                                (3, 2_000_000, 8_000_000)], [])
    assert summary == ("re-verified at restart (3 leader kills, counted from the files): p50 "
                       "2.0 MB, max 6.0 MB; p50 25%, max 100% of the broker's log; the brokers "
                       "log no count")


def test_the_restart_watch_summary_splits_off_the_registration():
    watch = RestartWatch(kafka=None)
    assert watch.registered(1, 2.5) == "; registered 2.5 s after the restart"
    watch.registered(2, 1.0)
    watch.registered(3, 9.0)
    watch.counted.append((1, 1_000_000, 2_000_000))
    assert watch.summary().splitlines()[1].startswith(
        "restart -> registered in ZooKeeper (process start, log recovery): p50 2.50 s, "
        "max 9.00 s;")


def test_startup_steps_read_the_last_start_with_or_without_milliseconds():
    log = ("[2026-11-26 19:58:01,000] INFO broker 1 starting: zookeeper.connect=x (b)\n"
           "[2026-11-26 19:58:01,250] INFO loading logs from /d (unclean shutdown) (m)\n"
           "[2026-11-26 19:58:03,750] INFO broker 1 registered at /brokers/ids/1 (b)\n"
           "[2026-11-26 19:59:00] INFO broker 1 starting: zookeeper.connect=x (b)\n"
           "[2026-11-26 19:59:01] INFO loading logs from /d (unclean shutdown) (m)\n")
    assert startup_steps(log) is None           # the last start has not registered yet
    assert startup_steps(log.rsplit("\n", 3)[0] + "\n") == (2.5, 2.75)
    assert startup_steps(log + "[2026-11-26 19:59:04] INFO broker 1 registered at /b (b)\n"
                         ) == (3.0, 4.0)


def test_cpu_seconds_of_this_process_grow_with_work():
    before = cpu_seconds(os.getpid())
    sum(i * i for i in range(2_000_000))
    after = cpu_seconds(os.getpid())
    assert before is not None and after > before
    assert cpu_seconds(2**22 + 12345) is None       # no such process
