"""``kafkalite produce`` when no broker listens: one error line naming the address and the fix,
after one connection attempt per bootstrap address (not ``max_block_ms`` of retries)."""

from __future__ import annotations

import io
import logging
import sys

import pytest

from kafkalite.cli.main import main


@pytest.fixture(autouse=True)
def keep_log_levels():
    """The command quiets the client loggers; give the other tests theirs back."""
    loggers = [logging.getLogger(name) for name in ("kafkalite", "kazoo")]
    levels = [lg.level for lg in loggers]
    yield
    for lg, level in zip(loggers, levels):
        lg.setLevel(level)


def stdin_lines(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_produce_to_closed_ports_fails_at_once_naming_the_address(monkeypatch, capsys,
                                                                  closed_ports, connects):
    stdin_lines(monkeypatch, b"one\ntwo\n")
    monkeypatch.delenv("KAFKALITE_BOOTSTRAP_SERVER", raising=False)
    servers = ",".join(f"127.0.0.1:{port}" for port in closed_ports)
    code = main(["produce", "--topic", "t", "--bootstrap-server", servers])
    out, err = capsys.readouterr()
    assert code == 1
    assert err.startswith(f"error: no broker answered at {servers} (connection refused)")
    assert "--bootstrap-server HOST:PORT" in err and "KAFKALITE_BOOTSTRAP_SERVER" in err
    assert len(err.strip().splitlines()) == 1 and out == ""
    # one round over the bootstrap addresses (what topics --list does), no retries for
    # max_block_ms
    assert connects == {port: 1 for port in closed_ports}


def test_topics_list_to_a_closed_port_says_the_same(monkeypatch, capsys, closed_ports,
                                                    connects):
    monkeypatch.delenv("KAFKALITE_ZOOKEEPER", raising=False)
    server = f"127.0.0.1:{closed_ports[0]}"
    code = main(["topics", "--list", "--bootstrap-server", server])
    _out, err = capsys.readouterr()
    assert code == 1
    assert err.startswith(f"error: no broker answered at {server} (connection refused)")
    assert connects == {closed_ports[0]: 1}
