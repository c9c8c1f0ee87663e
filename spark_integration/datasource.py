"""The "kafkalite" PySpark data source: batch and streaming reads and writes.

Use it as Spark's own Kafka source, with the format name changed::

    df = (spark.read.format("kafkalite")
          .option("kafkalite.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "payments")
          .load())                       # key, value, topic, partition, offset, timestamp, ...

    (df.selectExpr("key", "value").write.format("kafkalite")
       .option("kafkalite.bootstrap.servers", "127.0.0.1:9092")
       .option("topic", "copy").mode("append").save())

Options: see :mod:`spark_integration.options`. ``format("kafkalite")`` works without
registration when kafkalite is installed (PySpark finds the top-level ``pyspark_kafkalite``
module); :func:`spark_integration.register` registers it explicitly.

Delivery guarantees:

* Reads are exact: each Spark partition reads one offset range ``[from, until)`` of one
  topic-partition (up to the high watermark: only records every in-sync replica has).
  Streaming offsets live in Spark's checkpoint (nothing is committed to kafkalite), so a query
  restarted from its checkpoint continues exactly where it stopped; with an idempotent sink (files)
  that is exactly-once end to end.
* Writes use acks=all and wait for every acknowledgement before a task succeeds. A failed task or
  micro-batch is retried by Spark and may write some records twice: the sink is AT-LEAST-ONCE.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_integration.client_io import ClusterView, read_range, resolve_bootstrap, write_batches
from spark_integration.offsets import (
    EARLIEST,
    LATEST,
    OffsetRange,
    check_start,
    data_loss,
    limit_offsets,
    offsets_from_json,
    offsets_to_json,
    plan_ranges,
)
from spark_integration.options import (
    OptionError,
    ReadOptions,
    check_read_options,
    check_write_columns,
    parse_read_options,
    parse_write_options,
)

log = logging.getLogger("spark_integration")

__all__ = ["KafkaliteDataSource", "kafkalite_schema", "NAME"]

NAME = "kafkalite"

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()),
                                     StructField("value", BinaryType())]))


def kafkalite_schema(include_headers: bool = False) -> StructType:
    """The read schema, as Spark's Kafka source has it."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def _arrow_schema(schema: StructType):
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def _check_schema(schema: StructType, include_headers: bool) -> None:
    expected = kafkalite_schema(include_headers)
    if [(f.name, f.dataType) for f in schema.fields] != \
            [(f.name, f.dataType) for f in expected.fields]:
        raise OptionError("schema", f"the kafkalite source has a fixed schema and cannot take a "
                                    f"user-specified one; expected {expected.simpleString()}, "
                                    f"got {schema.simpleString()}")


class OffsetRangePartition(InputPartition):
    """One Spark partition: ``[from, until)`` of one topic-partition."""

    def __init__(self, rng: OffsetRange):
        super().__init__(rng)
        self.range = rng

    def __repr__(self) -> str:
        return f"OffsetRangePartition({self.range})"


class _RangeReading:
    """What batch and stream readers share: options, bootstrap, reading a range."""

    opts: ReadOptions
    bootstrap: str
    schema: StructType

    def _setup(self, options, schema: StructType, streaming: bool) -> None:
        self.opts = parse_read_options(options, streaming=streaming)
        _check_schema(schema, self.opts.include_headers)
        self.schema = schema
        self.bootstrap = resolve_bootstrap(self.opts.bootstrap_servers, self.opts.zookeeper)

    def _view(self) -> ClusterView:
        return ClusterView(self.bootstrap, self.opts.consumer_settings)

    def read(self, partition: InputPartition):
        rng = getattr(partition, "range", None)
        if rng is None:            # Spark's placeholder partition when there are no ranges
            return iter(())
        return read_range(self.bootstrap, rng, _arrow_schema(self.schema),
                          include_headers=self.opts.include_headers,
                          fail_on_data_loss=self.opts.fail_on_data_loss,
                          poll_timeout_ms=self.opts.poll_timeout_ms,
                          settings=self.opts.consumer_settings)


class KafkaliteBatchReader(_RangeReading, DataSourceReader):
    def __init__(self, options, schema: StructType):
        self._setup(options, schema, streaming=False)

    def plan(self) -> list[OffsetRange]:
        """The offset ranges to read, from the options and the partitions' offsets now."""
        opts = self.opts
        with self._view() as view:
            tps = view.partitions(opts.subscription, strict=True)
            earliest, latest = view.earliest(tps), view.latest(tps)
        start = opts.starting.resolve(tps, earliest, latest, default=EARLIEST)
        end = opts.ending.resolve(tps, earliest, latest, default=LATEST)
        ranges = []
        for tp in tps:
            s, e = start[tp], end[tp]
            if e > latest[tp]:
                raise OptionError("endingOffsets", f"offset {e} of partition {tp} is after its "
                                                   f"latest offset {latest[tp]}")
            if e < earliest[tp] and opts.ending.kind == "specific":
                data_loss(f"Partition {tp}: the ending offset {e} is before the log's start "
                          f"{earliest[tp]}", opts.fail_on_data_loss)
                continue
            if s > e:
                raise OptionError("startingOffsets", f"offset {s} of partition {tp} is after "
                                                     f"its ending offset {e}")
            s = check_start(tp, s, earliest[tp], latest[tp], opts.fail_on_data_loss,
                            what="starting offset")
            ranges.append(OffsetRange(tp.topic, tp.partition, s, e))
        return plan_ranges(ranges, opts.min_partitions)

    def partitions(self):
        return [OffsetRangePartition(r) for r in self.plan()]


class KafkaliteStreamReader(_RangeReading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches between offset dicts ``{"topic": {"partition": next offset}}``."""

    def __init__(self, options, schema: StructType):
        self._setup(options, schema, streaming=True)
        self._cluster: ClusterView | None = None
        self._target: dict | None = None      # availableNow: never read past these

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_cluster"] = None
        return state

    def _view(self) -> ClusterView:
        if self._cluster is None:
            self._cluster = ClusterView(self.bootstrap, self.opts.consumer_settings)
        return self._cluster

    def initialOffset(self) -> dict:
        opts = self.opts
        view = self._view()
        tps = view.partitions(opts.subscription, strict=True)
        earliest, latest = view.earliest(tps), view.latest(tps)
        start = opts.starting.resolve(tps, earliest, latest, default=EARLIEST)
        for tp in tps:
            start[tp] = check_start(tp, start[tp], earliest[tp], latest[tp],
                                    opts.fail_on_data_loss, what="starting offset")
        log.info("kafkalite stream (%s) starts at %s", opts.subscription.describe(), start)
        return offsets_to_json(start)

    def _latest(self) -> dict:
        view = self._view()
        return view.latest(view.partitions(self.opts.subscription, strict=False))

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest()
        log.info("kafkalite stream: availableNow reads up to %s", self._target)

    def getDefaultReadLimit(self):
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit) -> dict:
        start_offsets = offsets_from_json(start)
        latest = self._latest()
        if self._target is not None:
            latest = {tp: min(off, self._target[tp]) for tp, off in latest.items()
                      if tp in self._target}
        new = [tp for tp in latest if tp not in start_offsets]
        origin = {tp: off for tp, off in start_offsets.items() if tp in latest}
        if new:
            log.info("kafkalite stream: new partitions %s, read from the earliest offset", new)
            origin.update(self._view().earliest(new))
        if isinstance(limit, ReadMaxRows):
            end = limit_offsets(origin, {tp: max(off, origin[tp]) for tp, off in latest.items()},
                                limit.max_rows)
            # a partition whose log went backwards ends where it ends now (data loss is
            # reported when the batch is planned)
            end.update({tp: off for tp, off in latest.items() if off < origin[tp]})
        else:
            end = dict(latest)
        return offsets_to_json(end)

    def reportLatestOffset(self):
        return offsets_to_json(self._latest())

    def partitions(self, start: dict, end: dict):
        opts = self.opts
        start_offsets, end_offsets = offsets_from_json(start), offsets_from_json(end)
        for tp in start_offsets:
            if tp not in end_offsets:
                data_loss(f"Partition {tp} is gone (was its topic deleted?); it is no longer "
                          f"read", opts.fail_on_data_loss)
        new = [tp for tp in end_offsets if tp not in start_offsets]
        origin = dict(start_offsets)
        if new:
            origin.update(self._view().earliest(new))
        ranges = []
        for tp, until in end_offsets.items():
            begin = origin.get(tp)
            if begin is None:
                data_loss(f"Partition {tp}: its earliest offset is unknown", opts.fail_on_data_loss)
                continue
            if until < begin:
                data_loss(f"Partition {tp}: the offset went back from {begin} to {until} (the "
                          f"log was truncated, or the topic deleted and recreated)",
                          opts.fail_on_data_loss)
                continue
            ranges.append(OffsetRange(tp.topic, tp.partition, begin, until))
        return [OffsetRangePartition(r) for r in plan_ranges(ranges, opts.min_partitions)]

    def commit(self, end: dict) -> None:
        """Nothing to do: Spark keeps the positions in its checkpoint (as with Kafka)."""

    def stop(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


# --- writing -------------------------------------------------------------------------------------
@dataclass
class WriteResult(WriterCommitMessage):
    records: int


class _Writing:
    def _setup(self, options, schema: StructType) -> None:
        self.opts = parse_write_options(options)
        check_write_columns({f.name: f.dataType.simpleString() for f in schema.fields},
                            self.opts.topic)
        self.bootstrap = resolve_bootstrap(self.opts.bootstrap_servers, self.opts.zookeeper)

    def write(self, iterator) -> WriteResult:
        return WriteResult(write_batches(self.bootstrap, iterator, topic=self.opts.topic,
                                         settings=self.opts.producer_settings))


class KafkaliteBatchWriter(_Writing, DataSourceArrowWriter):
    def __init__(self, options, schema: StructType):
        self._setup(options, schema)

    def commit(self, messages) -> None:
        total = sum(m.records for m in messages if m is not None)
        log.info("kafkalite sink: wrote %d records", total)


class KafkaliteStreamWriter(_Writing, DataSourceStreamArrowWriter):
    def __init__(self, options, schema: StructType):
        self._setup(options, schema)

    def commit(self, messages, batchId: int) -> None:
        total = sum(m.records for m in messages if m is not None)
        log.info("kafkalite sink: batch %d wrote %d records", batchId, total)

    def abort(self, messages, batchId: int) -> None:
        log.warning("kafkalite sink: batch %d failed; records already acknowledged stay written "
                    "(at-least-once)", batchId)


class KafkaliteDataSource(DataSource):
    """``format("kafkalite")``: Spark's Kafka source, for kafkalite."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def _include_headers(self) -> bool:
        from spark_integration.options import parse_bool

        opts = {str(k).lower(): v for k, v in self.options.items()}
        return parse_bool("includeHeaders", opts.get("includeheaders"), False)

    def schema(self):
        # called when a read is loaded: fail early on options that are wrong either way
        check_read_options(self.options)
        return kafkalite_schema(self._include_headers())

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaliteBatchReader(self.options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaliteStreamReader(self.options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> KafkaliteBatchWriter:
        if overwrite:
            raise OptionError("mode", "save mode Overwrite is not allowed for kafkalite: a topic "
                                      "is append-only; use mode('append')")
        return KafkaliteBatchWriter(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaliteStreamWriter:
        return KafkaliteStreamWriter(self.options, schema)
