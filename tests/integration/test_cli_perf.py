"""``kafkalite perf produce|consume``: small runs against a real broker print Kafka's lines."""

from __future__ import annotations

import re

import pytest

from kafkalite.cli.main import main

pytestmark = pytest.mark.integration

PROGRESS = re.compile(r"\d+ records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg "
                      r"latency, [\d.]+ ms max latency\.")
FINAL = re.compile(r"(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg "
                   r"latency, [\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, "
                   r"\d+ ms 99\.9th\.")


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_perf_produce_then_consume(kafkalite_broker, capsys):
    bootstrap = ("--bootstrap-server", kafkalite_broker.bootstrap_servers)
    # throttled to about 0.5 s so that progress lines (every 100 ms here) appear
    code, out, err = run(capsys, "perf", "produce", "--topic", "perf", "--num-records", "20000",
                         "--record-size", "100", "--throughput", "40000", "--acks", "1",
                         "--reporting-interval", "100", "--producer-props", "linger.ms=2",
                         "batch.size=32768", *bootstrap)
    assert code == 0, err
    lines = out.splitlines()
    assert FINAL.fullmatch(lines[-1]) and FINAL.fullmatch(lines[-1]).group(1) == "20000"
    assert len(lines) >= 3 and all(PROGRESS.fullmatch(line) for line in lines[:-1]), out

    code, out, err = run(capsys, "perf", "consume", "--topic", "perf", "--messages", "20000",
                         "--timeout", "10000", *bootstrap)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[-3] == ("start.time, end.time, data.consumed.in.MB, MB.sec, "
                         "data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, "
                         "fetch.MB.sec, fetch.nMsg.sec")
    fields = lines[-2].split(", ")
    assert len(fields) == 10 and fields[4] == "20000"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}", fields[0])
    assert abs(float(fields[2]) - 20000 * 100 / 1024 / 1024) < 0.001
    assert re.fullmatch(r"20000 records received, [\d.]+ records/sec \([\d.]+ MB/sec\)\.",
                        lines[-1])

    # asking for more than there is stops after --timeout with Kafka's warning
    code, out, _ = run(capsys, "perf", "consume", "--topic", "perf", "--messages", "20001",
                       "--timeout", "300", "--hide-header", *bootstrap)
    assert code == 0
    assert "WARNING: Exiting before consuming the expected number of messages" in out
    assert out.splitlines()[-2].split(", ")[4] == "20000"


def test_perf_bad_input(kafkalite_broker, capsys):
    bootstrap = ("--bootstrap-server", kafkalite_broker.bootstrap_servers)
    code, _, err = run(capsys, "perf", "produce", "--topic", "p", "--num-records", "10",
                       "--producer-props", "acks=2", *bootstrap)
    assert code == 2 and err.startswith("error: bad producer setting") and "acks" in err
    code, _, err = run(capsys, "perf", "produce", "--topic", "p", "--num-records", "10",
                       "--producer-props", "lingerms=5", *bootstrap)
    assert code == 2 and "'lingerms' is not a setting" in err
    code, _, err = run(capsys, "perf", "consume", "--topic", "missing", "--messages", "10",
                       *bootstrap)
    assert code == 1 and "topic 'missing' does not exist" in err
