"""Clients for the Docker tests' clusters, run from the host (no test functions here): describe a
topic, read a topic to its end, keep producing around an action (e.g. killing a broker), check the
pipeline service's totals. kafkalite's own clients, through the brokers' host listener."""

from __future__ import annotations

import json
import re
import threading
import time

from pipeline_reference import differences, expected_totals, written_totals

from kafkalite.local.cluster import wait_until


def describe(admin, topic):
    """``{partition: its description}`` of ``topic``."""
    (description,) = admin.describe_topics([topic])
    return {p.partition: p for p in description.partitions}


def consume_all(bootstrap: str, topic: str, partitions, timeout_s: float = 60.0,
                acknowledged=()):
    """Every record of ``topic`` from the beginning up to the end offsets: {(p, offset): value}.

    ``acknowledged`` ((partition, offset) pairs): wait until the end offsets cover them first. A
    new leader learns the high watermark from its followers' next fetches, so just after a
    failover an acknowledged record can stay invisible for a moment (as in Kafka)."""
    from kafkalite.client import Consumer, TopicPartition

    tps = [TopicPartition(topic, p) for p in partitions]
    consumer = Consumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                        auto_offset_reset="earliest")
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + timeout_s
        wanted = {}
        for partition, offset in acknowledged:
            wanted[partition] = max(wanted.get(partition, 0), offset + 1)
        ends = consumer.end_offsets(tps)
        while any(ends[tp] < wanted.get(tp.partition, 0) for tp in tps):
            assert time.monotonic() < deadline, f"end offsets {ends} never reached {wanted}"
            time.sleep(0.1)
            ends = consumer.end_offsets(tps)
        seen = {}
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, (
                f"consumed only {len(seen)} records; positions "
                f"{ {tp.partition: consumer.position(tp) for tp in tps} }, ends "
                f"{ {tp.partition: e for tp, e in ends.items()} }")
            for records in consumer.poll(timeout_ms=500).values():
                for record in records:
                    seen[(record.partition, record.offset)] = record.value
        return seen
    finally:
        consumer.close()


def produce_while(bootstrap: str, topic: str, action, before: int = 200, after: int = 1000):
    """Produce (acks=all) from a thread, at most 200 records unacknowledged; run ``action`` once
    ``before`` records are acknowledged, and keep producing until ``after`` more are. Returns
    ({(partition, offset): value} acknowledged, number not acknowledged)."""
    from kafkalite.client import Producer

    stop = threading.Event()
    changed = threading.Condition()
    futures = []
    done = {"acked": 0, "failed": 0}

    def settled(key):
        def count(_result):
            with changed:
                done[key] += 1
                changed.notify_all()
        return count

    def produce():
        with Producer(bootstrap_servers=bootstrap, acks="all", retries=1000,
                      linger_ms=5) as producer:
            i = 0
            while not stop.is_set():
                with changed:
                    changed.wait_for(lambda: stop.is_set() or
                                     len(futures) - done["acked"] - done["failed"] < 200, 1)
                value = f"load-{i}".encode()
                future = producer.send(topic, key=value, value=value)
                future.add_callback(settled("acked")).add_errback(settled("failed"))
                futures.append((value, future))
                i += 1
            producer.flush(60)

    thread = threading.Thread(target=produce, name="docker-test-producer", daemon=True)
    thread.start()
    try:
        wait_until(lambda: done["acked"] >= before, 60, f"{before} records acknowledged")
        action()
        at_action = done["acked"]
        wait_until(lambda: done["acked"] >= at_action + after, 120,
                   f"{after} more records acknowledged after the action")
    finally:
        stop.set()
        with changed:
            changed.notify_all()
        thread.join(120)
    assert not thread.is_alive(), "the producer did not finish within 120 s"
    acked, failed = {}, 0
    for value, future in futures:
        try:
            md = future.get(1)
        except Exception:  # noqa: BLE001 - not acknowledged: no promise was made
            failed += 1
            continue
        acked[(md.partition, md.offset)] = value
    return acked, failed


def check_pipeline_totals(admin, bootstrap: str, output: str, say) -> None:
    """The totals the pipeline service (its output: ``output``) wrote to payer-totals equal the
    ones computed here from the payments it read (pipeline_reference: plain Python, neither Spark
    nor the pipeline's code). ``say`` prints a line."""
    payments = [json.loads(v) for v in
                consume_all(bootstrap, "payments", describe(admin, "payments")).values()]
    assert len({p["id"] for p in payments}) == 1000, "the pipeline should generate 1000 payments"
    # the reference assumes one micro-batch read all of them (so none was late)
    first = re.search(r"\[payer_totals_to_kafkalite\] batch 0: (\d+) input rows", output)
    assert first and int(first.group(1)) == len(payments), (
        f"the kafkalite sink's first micro-batch did not read all {len(payments)} payments: "
        f"{first.group(0) if first else 'no batch 0 line'}")
    expected = expected_totals(payments)
    assert len(expected) >= 6, f"too few closed windows to compare: {expected}"
    records = consume_all(bootstrap, "payer-totals", describe(admin, "payer-totals"))
    written, problems = written_totals(records.values())
    assert not problems, problems[:5]
    assert written == expected, (f"{len(written)} window totals written, {len(expected)} "
                                 f"expected; differences: {differences(expected, written)}")
    say(f"[docker-test] pipeline: {len(written)} window totals (from {len(records)} "
                 f"records) equal the reference computed from the {len(payments)} payments; "
                 f"{sum(c for c, _n in written.values()) / 100:,.2f} USD in "
                 f"{sum(n for _c, n in written.values())} payments")


def check_workers_ran_tasks(output: str, say) -> None:
    """The pipeline service ran on the standalone cluster: its output's "tasks completed per
    executor" line (the driver's REST API) names executors on both spark-worker hosts, each with
    completed tasks."""
    line = re.search(r"^tasks completed per executor: (.*)$", output, re.M)
    assert line, "the pipeline printed no per-executor task counts (not on spark://...?)"
    per_host: dict[str, int] = {}
    for _executor, host, tasks in re.findall(r"(\S+) on (\S+?):\d+ (\d+)", line.group(1)):
        per_host[host] = per_host.get(host, 0) + int(tasks)
    say(f"[docker-test] pipeline tasks per worker host: {per_host}")
    assert len([h for h, n in per_host.items() if n > 0]) >= 2, (
        f"the tasks did not run on both workers: {line.group(0)}")
