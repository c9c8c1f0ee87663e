"""Offset checkpoint files: Kafka's text format, atomic replacement, clear errors."""

from __future__ import annotations

import os

import pytest

from kafkalite.log import CorruptCheckpointError, OffsetCheckpoint, read_checkpoint, \
    write_checkpoint
from kafkalite.log import checkpoint as checkpoint_module


def test_roundtrip_and_format(tmp_path):
    path = str(tmp_path / "recovery-point-offset-checkpoint")
    offsets = {("my-topic", 0): 10, ("my-topic", 11): 0, ("a.b_c-d", 3): 2**40}
    write_checkpoint(path, offsets)
    with open(path) as f:
        assert f.read() == "0\n3\na.b_c-d 3 1099511627776\nmy-topic 0 10\nmy-topic 11 0\n"
    assert read_checkpoint(path) == offsets
    checkpoint = OffsetCheckpoint(path)
    checkpoint.write({})
    assert checkpoint.read() == {}
    assert not os.path.exists(path + ".tmp")


def test_missing_file_is_empty(tmp_path):
    assert read_checkpoint(str(tmp_path / "nope")) == {}


@pytest.mark.parametrize("text, where", [
    ("", "line 1"),
    ("0\n", "line 2"),
    ("1\n0\n", "unsupported version"),
    ("x\n0\n", "version"),
    ("0\ntwo\n", "entry count"),
    ("0\n2\nt 0 1\n", "declares 2 entries"),
    ("0\n1\nt 0\n", "line 3"),
    ("0\n1\nt zero 1\n", "must be numbers"),
    ("0\n1\nt 0 1 extra\n", "line 3"),
])
def test_malformed_files_are_rejected(tmp_path, text, where):
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError, match=where) as info:
        read_checkpoint(str(path))
    assert str(path) in str(info.value)


def test_write_is_atomic(tmp_path, monkeypatch):
    path = str(tmp_path / "cp")
    write_checkpoint(path, {("t", 0): 1})

    def crash(src, dst):
        raise OSError("power cut")

    monkeypatch.setattr(checkpoint_module.os, "replace", crash)
    with pytest.raises(OSError):
        write_checkpoint(path, {("t", 0): 2, ("t", 1): 5})
    assert read_checkpoint(path) == {("t", 0): 1}  # old content intact
    monkeypatch.undo()
    write_checkpoint(path, {("t", 0): 3})
    assert read_checkpoint(path) == {("t", 0): 3}


def test_topic_with_spaces_is_refused(tmp_path):
    with pytest.raises(ValueError):
        write_checkpoint(str(tmp_path / "cp"), {("bad topic", 0): 1})
