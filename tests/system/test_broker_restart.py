"""kill -9 the broker in the middle of a stream, start it again: every acknowledged record is
still there (flush on every message) and the log recovered by itself."""

import threading
import time

import pytest

from kafkalite import AdminClient, Consumer, NewTopic, Producer, TopicPartition
from kafkalite.local.cluster import wait_until

pytestmark = pytest.mark.system


def test_kill_9_mid_stream_loses_nothing_acknowledged(kafkalite_cluster_factory):
    cluster = kafkalite_cluster_factory(1, log_flush_interval_messages=1)
    bootstrap = cluster.bootstrap_servers
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic("stream", 2, 1)], timeout_ms=20000)
    acknowledged = []
    failures = []
    sent = [0]         # sends made, for the producer thread to report
    stop = threading.Event()

    def produce():
        producer = Producer(bootstrap_servers=bootstrap, acks=1, linger_ms=1, retries=0,
                            request_timeout_ms=3000)
        i = 0
        while not stop.is_set():
            value = b"%08d" % i
            future = producer.send("stream", key=b"k%d" % (i % 10), value=value)
            future.add_callback(lambda md, v=value: acknowledged.append((md.partition,
                                                                         md.offset, v)))
            future.add_errback(lambda exc: failures.append(exc))
            i += 1
            sent[0] = i
            if i % 100 == 0:
                time.sleep(0.001)
        try:
            producer.close(timeout=5)
        except Exception:   # noqa: BLE001 - the broker is gone: some sends fail, that is expected
            pass

    thread = threading.Thread(target=produce)
    thread.start()
    wait_until(lambda: len(acknowledged) > 5000, 60, "5000 acknowledged records")
    cluster.kill(1)
    stop.set()
    thread.join(30)
    assert not thread.is_alive(), "the producer did not stop within 30 s"
    # close() resolved every send: each one was acknowledged or failed, so the check below
    # covers everything the producer was told was stored
    snapshot = list(acknowledged)
    assert len(snapshot) + len(failures) == sent[0], (len(snapshot), len(failures), sent[0])
    cluster.restart(1)
    log_text = open(cluster.brokers[1].log_path).read()
    assert "unclean shutdown" in log_text or "recover" in log_text.lower()
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("stream", 0), TopicPartition("stream", 1)])
    stored = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        batch = consumer.poll(timeout_ms=500)
        for records in batch.values():
            for r in records:
                stored[(r.partition, r.offset)] = r.value
        ends = consumer.end_offsets([TopicPartition("stream", 0), TopicPartition("stream", 1)])
        if all(consumer.position(tp) >= end for tp, end in ends.items()):
            break
    consumer.close()
    missing = [(p, o) for p, o, v in snapshot if stored.get((p, o)) != v]
    print(f"acknowledged {len(snapshot)}, stored {len(stored)}, failed sends {len(failures)}")
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:5]}"
