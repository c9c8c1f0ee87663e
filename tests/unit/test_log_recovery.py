"""Log recovery after an unclean shutdown: torn writes, flipped bits, stray files."""

from __future__ import annotations

import os
import random
import shutil

import pytest
from logtools import START_MS, FakeClock, headers_of, make_batch, offsets_of, topic_config

from kafkalite.log import Log, LogSegment
from kafkalite.log.segment import segment_paths

CONFIG = topic_config(segment_bytes=1200, index_interval_bytes=150)


def _build(path, batches=14, records=3):
    clock = FakeClock()
    log = Log(str(path), CONFIG, clock)
    for i in range(batches):
        log.append(make_batch(records, timestamp=START_MS + i, value_size=8 + i % 5))
    state = [(h.base_offset, h.last_offset) for h in headers_of(log.read(0, 10**9).records)]
    log.close()
    return state


def _last_segment_file(path):
    logs = sorted(n for n in os.listdir(path) if n.endswith(".log"))
    return os.path.join(path, logs[-1])


def _batch_positions(file):
    with open(file, "rb") as f:
        data = f.read()
    out, pos = [], 0
    for h in headers_of(data):
        out.append((pos, h))
        pos += h.size
    return out, data


def test_torn_write_at_every_byte_of_the_last_batch(tmp_path):
    template = tmp_path / "template" / "t-0"
    expected = _build(template)
    last_file = _last_segment_file(template)
    positions, data = _batch_positions(last_file)
    last_pos, last_header = positions[-1]
    assert len(os.listdir(template)) >= 6  # several segments
    for cut in range(last_pos, len(data)):
        work = tmp_path / f"cut{cut}" / "t-0"
        shutil.copytree(template, work)
        for name in os.listdir(work):  # a crash before the indexes were written
            if name.endswith("index"):
                os.unlink(work / name)
        with open(os.path.join(work, os.path.basename(last_file)), "r+b") as f:
            f.truncate(cut)
        log = Log(str(work), CONFIG, FakeClock(), recovery_point=0, clean_shutdown=False)
        assert log.log_end_offset == last_header.base_offset
        assert log.recovery_truncated_bytes == cut - last_pos
        assert offsets_of(log.read(0, 10**9).records) == expected[:-1]
        info = log.append(make_batch(2))
        assert info.first_offset == last_header.base_offset
        assert offsets_of(log.read(0, 10**9).records)[-1] == (info.first_offset,
                                                              info.first_offset + 1)
        log.close()
        shutil.rmtree(work.parent)


def test_torn_write_with_recovery_point_only_rescans_the_tail(tmp_path, monkeypatch):
    path = tmp_path / "t-0"
    expected = _build(path)
    last_file = _last_segment_file(path)
    positions, data = _batch_positions(last_file)
    with open(last_file, "r+b") as f:
        f.truncate(len(data) - 5)
    recovered = []
    original = LogSegment.recover

    def spy(self):
        recovered.append(self.base_offset)
        return original(self)

    monkeypatch.setattr(LogSegment, "recover", spy)
    last_base = int(os.path.basename(last_file)[:20])
    log = Log(str(path), CONFIG, FakeClock(), recovery_point=last_base + 1,
              clean_shutdown=False)
    assert recovered == [last_base]
    assert offsets_of(log.read(0, 10**9).records) == expected[:-1]
    log.close()


def _flip_cases():
    """(batch index, byte within the batch): length, magic, CRC, and a spread over the part
    the CRC covers (attributes .. end of records)."""
    cases = [(b, p) for b in (0, 3) for p in (8, 9, 10, 11, 16, 17, 18, 19, 20)]
    rng = random.Random(7)
    for b in (0, 3):
        cases += [(b, p) for p in range(21, 61)]
        cases += [(b, 61 + rng.randrange(40)) for _ in range(12)]
    return cases


@pytest.mark.parametrize("corrupt_last_segment", [True, False])
def test_flipped_bit_is_detected(tmp_path, corrupt_last_segment):
    template = tmp_path / "template" / "t-0"
    _build(template, batches=20)
    files = sorted(n for n in os.listdir(template) if n.endswith(".log"))
    target_name = files[-1] if corrupt_last_segment else files[1]
    positions, data = _batch_positions(os.path.join(template, target_name))
    rng = random.Random(1)
    for n, (batch_no, byte) in enumerate(_flip_cases()):
        batch_no = min(batch_no, len(positions) - 1)
        pos, header = positions[batch_no]
        if byte >= header.size:
            continue
        work = tmp_path / f"flip{n}" / "t-0"
        shutil.copytree(template, work)
        damaged = bytearray(data)
        damaged[pos + byte] ^= 1 << rng.randrange(8)
        with open(os.path.join(work, target_name), "wb") as f:
            f.write(damaged)
        log = Log(str(work), CONFIG, FakeClock(), recovery_point=0, clean_shutdown=False)
        assert log.log_end_offset == header.base_offset, (batch_no, byte)
        assert log.active_segment.base_offset == int(target_name[:20])
        headers = headers_of(log.read(0, 10**9).records)
        assert (headers[-1].next_offset if headers else 0) == header.base_offset
        log.close()
        shutil.rmtree(work.parent)


def test_garbage_after_the_last_batch(tmp_path):
    path = tmp_path / "t-0"
    expected = _build(path)
    last = _last_segment_file(path)
    for junk in (b"\x00" * 100, os.urandom(300), b"\xff" * 12):
        with open(last, "ab") as f:
            f.write(junk)
        log = Log(str(path), CONFIG, FakeClock(), clean_shutdown=False)
        assert offsets_of(log.read(0, 10**9).records) == expected
        assert log.recovery_truncated_bytes == len(junk)
        log.close()


def test_clean_shutdown_skips_recovery(tmp_path, monkeypatch):
    path = tmp_path / "t-0"
    expected = _build(path)
    monkeypatch.setattr(LogSegment, "recover", lambda self: pytest.fail("recovered"))
    log = Log(str(path), CONFIG, FakeClock(), recovery_point=0, clean_shutdown=True)
    assert offsets_of(log.read(0, 10**9).records) == expected
    assert log.log_end_offset == expected[-1][1] + 1
    log.close()


def test_missing_and_stray_files(tmp_path):
    path = tmp_path / "t-0"
    expected = _build(path)
    names = sorted(os.listdir(path))
    first_index = next(n for n in names if n.endswith(".index"))
    second_time = [n for n in names if n.endswith(".timeindex")][1]
    os.unlink(path / first_index)
    os.unlink(path / second_time)
    for stray in ("00000000000000000003.log.deleted", "00000000000000000099.log.cleaned",
                  "00000000000000000099.index.swap", "00000000000000999999.index"):
        (path / stray).write_bytes(b"junk")
    log = Log(str(path), CONFIG, FakeClock(), clean_shutdown=True)
    assert offsets_of(log.read(0, 10**9).records) == expected
    for offset in range(0, expected[-1][1] + 1, 2):
        got = headers_of(log.read(offset, 1).records)[0]
        assert got.base_offset <= offset <= got.last_offset
    log.close()
    left = set(os.listdir(path))
    assert left == set(names)


def test_swap_file_replaces_its_segment(tmp_path):
    path = tmp_path / "t-0"
    expected = _build(path)
    log_files = sorted(n for n in os.listdir(path) if n.endswith(".log"))
    victim = log_files[1]
    base = int(victim[:20])
    positions, data = _batch_positions(path / victim)
    first_only = data[:positions[0][1].size]
    (path / (victim + ".swap")).write_bytes(first_only)
    log = Log(str(path), CONFIG, FakeClock(), clean_shutdown=True)
    got = offsets_of(log.read(0, 10**9).records)
    kept = positions[0][1]
    dropped = {(h.base_offset, h.last_offset) for _p, h in positions[1:]}
    assert got == [o for o in expected if o not in dropped]
    assert (kept.base_offset, kept.last_offset) in got
    assert not any(n.endswith(".swap") for n in os.listdir(path))
    assert os.path.exists(segment_paths(str(path), base)[1])
    log.close()


def test_empty_directory_starts_at_log_start_offset(tmp_path):
    log = Log(str(tmp_path / "t-0"), CONFIG, FakeClock(), log_start_offset=500)
    assert log.log_start_offset == log.log_end_offset == 500
    assert log.append(make_batch(1)).first_offset == 500
    log.close()
