"""Compacted and retained topics after their cleaners ran.

Topics get small segments (segment.bytes), a dirty ratio near zero and no compaction lag, so a
cleaner pass has work as soon as a segment rolls. Kafka's log cleaner looks every
log.cleaner.backoff.ms (15 s by default) and also applies retention to compact,delete topics
then; the scenarios wait for the change a consumer can see, at most CLEANER_WAIT_S, and report
what they saw (or that nothing changed). Only what a finished cleaner pass decides is reported
(each key's latest record), never counts a half-done pass could show.
"""

from __future__ import annotations

from kafkalite.testing.conformance import clients
from kafkalite.testing.conformance.catalogue import records
from kafkalite.testing.conformance.scenario import Context, Family

family = Family("retention")
scenario = family.scenario

#: past Kafka's default log.cleaner.backoff.ms (15 s), with room for a busy machine
CLEANER_WAIT_S = 35.0
_COMPACT = {"cleanup.policy": "compact", "segment.bytes": "1000",
            "min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0"}


def _keyed(leader: str, topic: str, rounds: int, keys: range = range(3)) -> None:
    """``rounds`` values for each key ``k<n>``, one record per batch (so segments roll)."""
    for _ in range(rounds):
        for k in keys:
            records.produce(leader, topic, records.batch(1, 40, key=b"k%d" % k))


def _tombstone(leader: str, topic: str, key: bytes) -> None:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, timestamp=records.TS, key=key, value=None, headers=[])
    records.produce(leader, topic, bytes(builder.build()))


def _changed(condition, what: str) -> bool:
    try:
        clients.wait_for(condition, what, CLEANER_WAIT_S, 0.5)
        return True
    except clients.ScenarioError:
        return False


@scenario("compaction-keeps-latest", "Produce", "Fetch")
def compaction_keeps_latest(ctx: Context) -> object:
    """Ten rounds over three keys in 1000-byte segments, then a tombstone for k0 and two more
    rounds of k1 and k2: once the cleaner ran, a consumer reading from the beginning finds
    fewer records, each key's latest record where it was, and k0's last record a tombstone."""
    topic = clients.create_topic(ctx, "t", config=_COMPACT)
    leader = clients.leader_address(ctx, topic)
    _keyed(leader, topic, 10)
    _tombstone(leader, topic, b"k0")
    _keyed(leader, topic, 2, keys=range(1, 3))
    total = clients.watermarks(ctx, topic)[1]
    compacted = _changed(lambda: len(clients.read_to_end(ctx, topic)) < total, "compaction")
    latest: dict = {}
    for r in clients.read_to_end(ctx, topic):
        latest[r.get("key")] = [r.get("offset"), r.get("value") is None]
    return {"compacted": compacted, "high watermark": total,
            "latest per key [offset, tombstone]": dict(sorted(latest.items(), key=str))}


@scenario("compact-delete-retention", "Produce", "ListOffsets")
def compact_delete_retention(ctx: Context) -> object:
    """cleanup.policy=compact,delete with retention.ms=1000 and records timestamped in 2020:
    the cleaner also deletes expired segments, so the log start offset moves."""
    topic = clients.create_topic(ctx, "t", config={**_COMPACT,
                                                   "cleanup.policy": "compact,delete",
                                                   "retention.ms": "1000"})
    _keyed(clients.leader_address(ctx, topic), topic, 6, keys=range(5))
    moved = _changed(lambda: clients.watermarks(ctx, topic)[0] > 0,
                     "the log start offset to move")
    return {"log start moved": moved, "high watermark": clients.watermarks(ctx, topic)[1]}
