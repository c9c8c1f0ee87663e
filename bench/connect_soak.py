"""Kafka Connect 2.8.2 soak: a FileStream copy through several broker kills, on kafkalite and on
Apache Kafka 2.8.2 (issue 25, item 3; the suite's short version is tests/jvm/test_kafka_connect.py).

    python bench/connect_soak.py [--system kafkalite|kafka|both] [--lines 50000] [--kills 4]
                                 [--chunk 500]

Per system: a ZooKeeper chroot, 3 brokers (rf 3, min.insync.replicas 2), one distributed worker
(``kafkalite.testing.kafka_connect.ConnectWorker``), a one-partition topic, and a FileStreamSource
-> topic -> FileStreamSink pair made through the REST API. The source file is written in chunks
kept at most 4 chunks ahead of the sink file (``PacedWriter``). ``--kills`` times, evenly through
the copy, the current leader of the data topic is killed with SIGKILL, the copy goes on without
it until the sink has another chunk, and it is restarted (the writer held meanwhile). At the end
the sink file and the topic (read by confluent-kafka) must hold every line in order, duplicates
only as at-least-once rewinds/retries (counted), and both connectors RUNNING. One JSON line per
system; exit 1 when a check failed (the logs are then kept). Wall-clock seconds are for
information only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from kafkalite.local.cluster import LocalCluster, wait_until  # noqa: E402
from kafkalite.local.zookeeper import create_chroots, start_zookeeper  # noqa: E402
from kafkalite.testing.independent_read import read_to_end  # noqa: E402
from kafkalite.testing.kafka_connect import (CLUSTER_SETTINGS, ConnectWorker,  # noqa: E402
                                             PacedWriter, append_lines, check_at_least_once,
                                             file_copy_configs, full_lines, worker_settings)


def _leader(bootstrap: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient

    meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return meta.topics[topic].partitions[0].leader


def _values(bootstrap: str, topic: str) -> list[str]:
    """Partition 0 of ``topic`` to its end (confluent-kafka)."""
    return [m.value().decode() for m in read_to_end(bootstrap, topic, timeout_s=120)]


def soak(system: str, zk_connect: str, workdir: str, lines_n: int, kills: int,
         chunk: int) -> dict:
    if system == "kafka":
        from kafkalite.testing.apache_kafka import ApacheKafkaCluster
        cluster = ApacheKafkaCluster(zk_connect, 3, workdir=os.path.join(workdir, "brokers"),
                                     overrides=dict(CLUSTER_SETTINGS))
    else:
        cluster = LocalCluster(zk_connect, 3, workdir=os.path.join(workdir, "brokers"),
                               overrides=dict(CLUSTER_SETTINGS))
    result: dict = {"system": system, "lines": lines_n, "kills": []}
    started = time.monotonic()
    cluster.start()
    worker = None
    try:
        bootstrap = cluster.bootstrap_servers
        group = f"soak-{uuid.uuid4().hex[:8]}"
        worker = ConnectWorker(bootstrap, os.path.join(workdir, "worker"), group,
                               worker_settings(group)).start()
        from confluent_kafka.admin import AdminClient, NewTopic
        topic = f"{group}-lines"
        admin = AdminClient({"bootstrap.servers": bootstrap})    # kept until the answer
        admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(60)
        wait_until(lambda: _leader(bootstrap, topic) >= 0, 60, f"a leader for {topic}")
        source_file, sink_file = (os.path.join(workdir, f"{kind}.txt")
                                  for kind in ("source", "sink"))
        append_lines(source_file, [])
        configs = file_copy_configs(group, topic, source_file, sink_file)
        for connector, config in configs.items():
            worker.create_connector(connector, config)
        for connector in configs:
            wait_until(lambda: worker.running(connector), 60, f"{connector} RUNNING",
                       interval_s=0.25, on_timeout=worker.describe)
        tag = uuid.uuid4().hex[:6]
        lines = [f"{tag} line {i:07d} " + "ab" * (i % 17) for i in range(lines_n)]
        writer = PacedWriter(source_file, sink_file, lines, chunk=chunk, ahead=4, timeout_s=300)
        writer.start()
        for k in range(1, kills + 1):
            mark = lines_n * k // (kills + 1)
            wait_until(lambda: writer.error or len(full_lines(sink_file)) >= mark, 300,
                       f"{mark} lines in the sink file", interval_s=0.05,
                       on_timeout=worker.describe)
            victim = _leader(cluster.bootstrap_servers, topic)
            cluster.kill(victim)
            killed_at = time.monotonic()
            at = len(full_lines(sink_file))
            wait_until(lambda: writer.error or len(full_lines(sink_file)) >= at + chunk, 300,
                       f"the copy going on without broker {victim}", interval_s=0.05,
                       on_timeout=worker.describe)
            without = time.monotonic() - killed_at
            # the copy waits while the broker restarts (Kafka's waits out its ZooKeeper session
            # first): the next kill comes mid-copy too
            writer.proceed.clear()
            cluster.restart(victim)
            writer.proceed.set()
            result["kills"].append({"broker": victim, "sink_lines": at,
                                    "seconds_to_next_chunk": round(without, 1)})
        writer.join(600)
        assert not writer.is_alive() and writer.error is None, writer.error
        wait_until(lambda: set(full_lines(sink_file)) == set(lines), 300,
                   "every line in the sink file", interval_s=0.25, on_timeout=worker.describe)
        result["sink_duplicates"] = check_at_least_once(full_lines(sink_file), lines)
        result["topic_duplicates"] = check_at_least_once(
            _values(cluster.bootstrap_servers, topic), lines)
        for connector in configs:
            assert worker.running(connector), worker.status(connector)
        result["ok"] = True
    except Exception as exc:  # noqa: BLE001 - reported in the JSON line
        result.update(ok=False, error=f"{type(exc).__name__}: {exc}"[:3000])
        if worker is not None:
            print(worker.describe(100), file=sys.stderr)
    finally:
        if worker is not None:
            worker.kill()
        for broker_id in list(cluster.brokers):
            cluster.kill(broker_id)
        cluster.stop()
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--system", choices=("kafkalite", "kafka", "both"), default="both")
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--kills", type=int, default=4)
    parser.add_argument("--chunk", type=int, default=500)
    args = parser.parse_args()
    systems = ("kafkalite", "kafka") if args.system == "both" else (args.system,)
    workdir = tempfile.mkdtemp(prefix="connect-soak-")
    zookeeper = start_zookeeper(os.path.join(workdir, "zk"))
    ok = True
    try:
        for system in systems:
            chroot = create_chroots(zookeeper.connect_string, f"soak-{system}")[0]
            result = soak(system, f"{zookeeper.connect_string}{chroot}",
                          os.path.join(workdir, system), args.lines, args.kills, args.chunk)
            print(json.dumps(result), flush=True)
            ok = ok and result["ok"]
    finally:
        zookeeper.stop()
    if ok:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"connect_soak: brokers' and worker's logs kept in {workdir}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
