"""What the data source does with kafkalite's blocking clients (no Spark imports here).

* :func:`resolve_bootstrap`: ``kafkalite.bootstrap.servers`` as given, or the brokers registered
  in ZooKeeper (``/brokers/ids``) for ``kafkalite.zookeeper``. The driver resolves it once and
  ships the result to the executors, which never talk to ZooKeeper.
* :class:`ClusterView`: the driver's view of the topics: partitions of a subscription, earliest
  and latest (high watermark) offsets.
* :func:`read_range`: an executor reads ``[from, until)`` of one partition exactly and yields
  Arrow record batches in the source's schema.
* :func:`write_batches`: an executor produces Arrow record batches (acks=all) and waits until
  every record is acknowledged; any failure fails the task. Spark may retry a failed task or
  micro-batch, so the sink is AT-LEAST-ONCE: a retried write can duplicate records.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator

from kafkalite.client.structs import TopicPartition
from spark_integration.offsets import OffsetRange, data_loss
from spark_integration.options import OptionError, Subscription

log = logging.getLogger("spark_integration")

__all__ = ["resolve_bootstrap", "ClusterView", "read_range", "write_batches"]

# a reader never creates topics, and hands records out in big chunks
_CONSUMER_DEFAULTS = dict(group_id=None, enable_auto_commit=False, auto_offset_reset="none",
                          allow_auto_create_topics=False, max_poll_records=20_000)


def resolve_bootstrap(bootstrap_servers: str | None, zookeeper: str | None) -> str:
    """``host:port,...`` of the brokers to bootstrap from."""
    if bootstrap_servers:
        return bootstrap_servers
    from kafkalite.zk import ZkClient

    try:
        client = ZkClient(zookeeper, session_timeout_ms=10_000, connection_timeout_s=10).start()
    except Exception as exc:  # any connection problem, said plainly
        raise OptionError("kafkalite.zookeeper", f"cannot reach ZooKeeper at {zookeeper!r}: "
                                                 f"{exc}") from exc
    try:
        brokers = client.get_brokers()
    finally:
        client.stop()
    addresses = []
    for broker_id, registration in sorted(brokers.items()):
        endpoint = registration.endpoint("PLAINTEXT") or (registration.host, registration.port)
        addresses.append(f"{endpoint[0]}:{endpoint[1]}")
    if not addresses:
        raise OptionError("kafkalite.zookeeper", f"no brokers are registered under "
                                                 f"{zookeeper!r} (/brokers/ids is empty)")
    return ",".join(addresses)


class ClusterView:
    """Topics, partitions and offsets, through one metadata-only Consumer (driver side)."""

    def __init__(self, bootstrap_servers: str, settings: dict | None = None):
        from kafkalite.client import Consumer

        config = dict(_CONSUMER_DEFAULTS)
        config.update(settings or {})
        self._consumer = Consumer(bootstrap_servers=bootstrap_servers, **config)

    def partitions_by_topic(self, subscription: Subscription) -> dict[str, list[int]]:
        """``{topic: sorted partition ids}`` of existing topics the subscription may name."""
        topics = subscription.named_topics() or sorted(self._consumer.topics())
        out: dict[str, list[int]] = {}
        for topic in topics:
            parts = self._consumer.partitions_for_topic(topic)
            if parts:
                out[topic] = sorted(parts)
        return out

    def partitions(self, subscription: Subscription, *, strict: bool) -> list[TopicPartition]:
        return subscription.resolve(self.partitions_by_topic(subscription), strict=strict)

    def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        tps = list(tps)
        if not tps:
            return {}
        found = self._consumer.beginning_offsets(tps)
        return {TopicPartition(*tp): off for tp, off in found.items()}

    def latest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """High watermarks: consumers see the records below them."""
        tps = list(tps)
        if not tps:
            return {}
        found = self._consumer.end_offsets(tps)
        return {TopicPartition(*tp): off for tp, off in found.items()}

    def close(self) -> None:
        self._consumer.close(autocommit=False)

    def __enter__(self) -> ClusterView:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- reading ------------------------------------------------------------------------------------
def _to_batch(records: list, arrow_schema, include_headers: bool):
    """ConsumerRecord tuples -> one Arrow batch in the source schema."""
    import pyarrow as pa

    (topics, partitions, offsets, timestamps, types, keys, values,
     headers) = zip(*records)
    types_ = [f.type for f in arrow_schema]
    micros = [ts * 1000 for ts in timestamps]
    arrays = [
        pa.array(keys, types_[0]),
        pa.array(values, types_[1]),
        pa.array(topics, types_[2]),
        pa.array(partitions, types_[3]),
        pa.array(offsets, types_[4]),
        pa.array(micros, types_[5]),
        pa.array(types, types_[6]),
    ]
    if include_headers:
        arrays.append(pa.array(headers, types_[7]))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


def read_range(bootstrap_servers: str, rng: OffsetRange, arrow_schema, *,
               include_headers: bool = False, fail_on_data_loss: bool = True,
               poll_timeout_ms: int = 120_000, settings: dict | None = None
               ) -> Iterator:
    """Yield Arrow batches with exactly the records of ``rng`` (``[from, until)``).

    Offsets missing inside the range (compaction, control batches) are simply absent. Offsets
    deleted by retention before or while reading are data loss (see ``failOnDataLoss``).
    """
    if rng.size <= 0:
        return
    from kafkalite.client import Consumer
    from kafkalite.errors import OffsetOutOfRangeError

    config = dict(_CONSUMER_DEFAULTS)
    config.update(settings or {})
    tp = TopicPartition(rng.topic, rng.partition)
    until = rng.until_offset
    consumer = Consumer(bootstrap_servers=bootstrap_servers, **config)
    try:
        consumer.assign([tp])
        consumer.seek(tp, rng.from_offset)
        position = rng.from_offset
        waited_since = time.monotonic()
        while position < until:
            try:
                got = consumer.poll(timeout_ms=min(1000, poll_timeout_ms))
            except OffsetOutOfRangeError:
                earliest = consumer.beginning_offsets([tp])[tp]
                latest = consumer.end_offsets([tp])[tp]
                if earliest > position:
                    data_loss(f"Partition {tp}: offsets [{position}, {min(earliest, until)}) "
                              f"were deleted before they could be read (the log now starts at "
                              f"{earliest})", fail_on_data_loss)
                    position = earliest
                elif latest < until:
                    data_loss(f"Partition {tp}: the log now ends at {latest}, before the "
                              f"offset {until} this read needs", fail_on_data_loss)
                    until = min(until, latest)
                else:
                    raise
                if position >= until:
                    break
                consumer.seek(tp, position)
                continue
            records = got.get(tp)
            if not records:
                position = max(position, consumer.position(tp))
                if (time.monotonic() - waited_since) * 1000 > poll_timeout_ms:
                    raise TimeoutError(
                        f"reading {rng}: no records for {poll_timeout_ms} ms at offset {position} "
                        f"(kafkaConsumer.pollTimeoutMs); is the partition's leader available?")
                continue
            waited_since = time.monotonic()
            if records[0][2] < position:
                # never hand out a record twice, whatever the consumer does
                log.warning("%s: the consumer returned offset %d below the position %d; "
                            "dropping the repeated records", tp, records[0][2], position)
                records = [r for r in records if r[2] >= position]
            if records and records[-1][2] >= until:
                records = [r for r in records if r[2] < until]
            if records:
                position = records[-1][2] + 1
                yield _to_batch(records, arrow_schema, include_headers)
            else:
                position = until
    finally:
        consumer.close(autocommit=False)


# --- writing ------------------------------------------------------------------------------------
_WRITE_COLUMNS = frozenset({"value", "key", "topic", "partition", "headers"})


def _as_bytes(values: list) -> list:
    return [v.encode("utf-8") if isinstance(v, str) else v for v in values]


def write_batches(bootstrap_servers: str, batches: Iterable, *, topic: str | None,
                  settings: dict | None = None, flush_every: int = 50_000) -> int:
    """Produce every row of ``batches`` (Arrow) with acks=all; returns how many were written.

    Columns: ``value`` (required), ``key``, ``topic``, ``partition``, ``headers`` (optional; see
    ``options.check_write_columns``). The ``topic`` argument (the option) wins over the column.
    Raises on the first record that failed, after waiting for everything sent so far.
    """
    from kafkalite.client import Producer

    config = dict(settings or {})
    config["acks"] = "all"
    producer = Producer(bootstrap_servers=bootstrap_servers, **config)
    written = 0
    futures: list = []

    def settle() -> None:
        producer.flush()
        for future in futures:
            future.get(timeout=60)
        futures.clear()

    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            columns = {name.lower(): batch.column(i).to_pylist()
                       for i, name in enumerate(batch.schema.names)
                       if name.lower() in _WRITE_COLUMNS}
            values = _as_bytes(columns["value"])
            n = len(values)
            keys = _as_bytes(columns["key"]) if "key" in columns else [None] * n
            topics = [topic] * n if topic is not None else columns["topic"]
            partitions = columns.get("partition") or [None] * n
            headers = columns.get("headers") or [None] * n
            send = producer.send
            for i in range(n):
                row_topic = topics[i]
                if row_topic is None:
                    raise OptionError("topic", f"row {written + i} has a null 'topic' and there "
                                               f"is no 'topic' option")
                row_headers = headers[i]
                if row_headers:
                    row_headers = [(h["key"], h["value"]) for h in row_headers]
                futures.append(send(row_topic, value=values[i], key=keys[i],
                                    partition=partitions[i], headers=row_headers or None))
            written += n
            if len(futures) >= flush_every:
                settle()
        settle()
    finally:
        producer.close()
    return written
