"""The demo that ``kafkalite cluster up --demo`` runs against the cluster it started.

It walks through the classic architecture with real requests: create a replicated topic, show
where its leaders are, produce keyed records (the same key always lands on the same partition),
read them back with their offsets, read the same records with kcat (librdkafka, a real Kafka
client, over Kafka's own protocol on the same port), then run the Spark payments pipeline when
PySpark is installed.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from collections import Counter

import click

from kafkalite import AdminClient, Consumer, NewTopic, Producer, TopicPartition


def run_demo(bootstrap_servers: str, zookeeper: str, replication_factor: int) -> None:
    click.secho("\n== 1. a replicated topic ==", bold=True)
    with AdminClient(bootstrap_servers=bootstrap_servers) as admin:
        if "greetings" not in admin.list_topics():
            admin.create_topics([NewTopic("greetings", 3, replication_factor)],
                                timeout_ms=30000)
        for description in admin.describe_topics(["greetings"]):
            for p in description.partitions:
                click.echo(f"  greetings-{p.partition}: leader broker {p.leader}, "
                           f"replicas {p.replicas}, in-sync {p.isr}")
    click.secho("\n== 2. keyed records: one key, one partition ==", bold=True)
    people = ["ada", "grace", "linus", "margaret", "ken"]
    with Producer(bootstrap_servers=bootstrap_servers, acks="all") as producer:
        futures = [producer.send("greetings", key=name.encode(),
                                 value=f"hello #{i} from {name}".encode())
                   for i in range(20) for name in people]
        placed = [f.get(timeout=30) for f in futures]
    by_key = {}
    for future_md, (i, name) in zip(placed, [(i, n) for i in range(20) for n in people]):
        by_key.setdefault(name, set()).add(future_md.partition)
    for name, partitions in sorted(by_key.items()):
        click.echo(f"  key {name!r:11} -> partition {sorted(partitions)}")
    click.secho("\n== 3. read them back, in order per partition ==", bold=True)
    consumer = Consumer(bootstrap_servers=bootstrap_servers, auto_offset_reset="earliest")
    consumer.assign([TopicPartition("greetings", p) for p in range(3)])
    records = []
    ends = consumer.end_offsets([TopicPartition("greetings", p) for p in range(3)])
    while sum(consumer.position(tp) for tp in ends) < sum(ends.values()):
        for batch in consumer.poll(timeout_ms=1000).values():
            records.extend(batch)
    consumer.close()
    for record in records[:6]:
        click.echo(f"  partition {record.partition} offset {record.offset:3}  "
                   f"{record.key.decode():9} {record.value.decode()}")
    counts = Counter(r.partition for r in records)
    click.echo(f"  ... {len(records)} records: "
               + ", ".join(f"partition {p}: {n}" for p, n in sorted(counts.items())))
    show_kcat(bootstrap_servers)
    click.secho("\n== 5. the Spark pipeline ==", bold=True)
    if importlib.util.find_spec("pyspark") is None:
        click.echo("  PySpark is not installed: run scripts/setup.sh --spark to add it")
        return
    from spark_integration.pipelines.payments import run_demo as run_pipeline_demo

    run_pipeline_demo(bootstrap_servers)


def show_kcat(bootstrap_servers: str) -> None:
    """The same records through kcat: Kafka's wire protocol and Kafka's record format."""
    click.secho("\n== 4. a real Kafka client reads them: kcat ==", bold=True)
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        click.echo("  kcat is not installed: apt-get install kcat (scripts/setup.sh does)")
        return
    command = [kcat, "-b", bootstrap_servers, "-C", "-t", "greetings", "-p", "0",
               "-o", "beginning", "-c", "5", "-e", "-q",
               "-f", "  partition %p offset %o  key %k  value %s\n"]
    click.echo("  $ " + " ".join(command[:-2]) + " -f '...'")
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        click.echo("  kcat did not finish within 30 s")
        return
    click.echo(result.stdout.rstrip() or f"  kcat printed nothing: {result.stderr.strip()}")
