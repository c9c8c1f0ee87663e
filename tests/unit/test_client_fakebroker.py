"""A fake kafkalite cluster for the client unit tests.

``FakeCluster(n)`` starts ``n`` tiny threaded TCP brokers on 127.0.0.1 that speak the real
envelope (``kafkalite.protocol``) and keep topics in memory as lists of record batches (the real
``kafkalite.record`` format, offsets assigned by patching the batch header as the broker does).
It answers ApiVersions, Metadata, Produce, Fetch (long poll), ListOffsets, CreateTopics,
DeleteTopics and InitProducerId, and the group APIs (FindCoordinator, JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups) from a
minimal in-memory group coordinator (``FakeGroupCoordinator``) on broker ``coordinator_id``.

Fault injection for tests:

* ``cluster.produce_errors[(topic, p)] = [code, ...]``: the next produce(s) to that partition
  are answered with these codes (nothing is written);
* ``cluster.fetch_errors[(topic, p)] = [code, ...]`` likewise for fetches;
* ``cluster.leader_not_available_rounds = k``: a new (auto-created) topic reports
  LEADER_NOT_AVAILABLE in its first ``k`` metadata answers;
* ``cluster.fetch_truncate = True``: fetch answers are cut at ``partition_max_bytes`` even in
  the middle of a batch (a partial trailing batch, as a byte-limited fetch returns);
* ``cluster.request_log`` records ``(node_id, api_key, request)`` of every request;
* ``cluster.coordinator_errors = [code, ...]``: the next FindCoordinator(s) get these codes;
* ``cluster.coordinator_id = n``: move the group coordinator (the others answer
  NOT_COORDINATOR to group requests);
* ``cluster.groups.clock = f``: the group coordinator's sessions and rebalance timeouts run on
  ``f()`` (seconds) instead of ``time.monotonic``.

The module's own tests check the fake against the protocol codecs.
"""

from __future__ import annotations

import bisect
import socket
import threading
import time

import pytest

from kafkalite import errors
from kafkalite.protocol import envelope
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.framing import FrameDecoder
from kafkalite.record import read_batch, validate_batch_bytes
from kafkalite.record.header import set_base_offset


class FakePartition:
    def __init__(self, leader: int, replicas: list[int]):
        self.leader = leader
        self.replicas = replicas
        self.batches: list[tuple[int, int, bytes]] = []   # (base, last, bytes)
        self.lasts: list[int] = []
        self.log_start = 0
        self.leo = 0

    def append(self, data: bytes) -> int:
        headers = validate_batch_bytes(data, from_producer=True)
        buf = bytearray(data)
        base = self.leo
        pos = 0
        for h in headers:
            set_base_offset(buf, pos, self.leo)
            chunk = bytes(buf[pos:pos + h.size])
            last = self.leo + h.last_offset_delta
            self.batches.append((self.leo, last, chunk))
            self.lasts.append(last)
            self.leo = last + 1
            pos += h.size
        return base

    def read(self, offset: int, max_bytes: int, truncate: bool) -> bytes:
        i = bisect.bisect_left(self.lasts, offset)
        out = []
        size = 0
        while i < len(self.batches):
            data = self.batches[i][2]
            if size and size + len(data) > max_bytes and not truncate:
                break
            out.append(data)
            size += len(data)
            if size >= max_bytes:
                break
            i += 1
        joined = b"".join(out)
        if truncate and len(joined) > max_bytes:
            joined = joined[:max_bytes]
        return joined

    def records(self):
        for _base, _last, data in self.batches:
            yield from read_batch(data)[1]

    def offset_for_time(self, ts: int) -> tuple[int, int]:
        for r in self.records():
            if r.timestamp >= ts:
                return r.offset, r.timestamp
        return -1, -1


class FakeMember:
    def __init__(self, member_id, instance_id, client_id, host, session_ms, rebalance_ms,
                 protocols):
        self.member_id = member_id
        self.instance_id = instance_id
        self.client_id = client_id
        self.host = host
        self.session_s = session_ms / 1000
        self.rebalance_s = rebalance_ms / 1000
        self.protocols = protocols            # [(name, metadata)]
        self.assignment = b""
        self.awaiting_join = False
        self.last_seen = time.monotonic()


class FakeGroup:
    def __init__(self, group_id):
        self.group_id = group_id
        self.state = "Empty"
        self.generation = 0
        self.protocol_type = ""
        self.protocol: str | None = None
        self.leader: str | None = None
        self.members: dict[str, FakeMember] = {}
        self.pending: set[str] = set()        # ids handed out with MEMBER_ID_REQUIRED
        self.offsets: dict[tuple, tuple] = {}  # (topic, partition) -> (offset, epoch, metadata)
        self.rebalance_deadline = 0.0


class FakeGroupCoordinator:
    """A minimal in-memory version of Kafka's GroupCoordinator, enough for the clients' tests:
    eager rebalances (JoinGroup waits for every member or the rebalance timeout, the leader's
    SyncGroup hands out the assignments), heartbeats, session expiry, LeaveGroup, offsets.
    Runs on the fake brokers' connection threads under the cluster's condition."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.groups: dict[str, FakeGroup] = {}
        self.counter = 0
        self.clock = time.monotonic     # sessions and rebalance timeouts run on this (seconds)

    # internal helpers (called with cluster.lock held) -------------------------------------
    def _group(self, group_id, create=False):
        g = self.groups.get(group_id)
        if g is None and create:
            g = self.groups[group_id] = FakeGroup(group_id)
        return g

    def _expire(self, g: FakeGroup) -> None:
        now = self.clock()
        for mid, member in list(g.members.items()):
            if not member.awaiting_join and now - member.last_seen > member.session_s:
                self._remove(g, mid)
        if g.state == "PreparingRebalance" and now >= g.rebalance_deadline:
            for mid, member in list(g.members.items()):
                if not member.awaiting_join:
                    del g.members[mid]
            self._try_complete_join(g, force=True)

    def _remove(self, g: FakeGroup, member_id: str) -> None:
        g.members.pop(member_id, None)
        self._prepare(g)
        self._try_complete_join(g, force=not g.members)

    def _prepare(self, g: FakeGroup) -> None:
        if g.state != "PreparingRebalance":
            g.state = "PreparingRebalance"
            g.rebalance_deadline = self.clock() + max(
                [m.rebalance_s for m in g.members.values()] or [0])
        self.cluster.lock.notify_all()

    def _try_complete_join(self, g: FakeGroup, force=False) -> None:
        if g.state != "PreparingRebalance":
            return
        if not force and not all(m.awaiting_join for m in g.members.values()):
            return
        g.generation += 1
        if not g.members:
            g.state, g.protocol, g.leader = "Empty", None, None
            self.cluster.lock.notify_all()
            return
        if g.leader not in g.members:
            g.leader = next(iter(g.members))
        names = [n for n, _ in g.members[g.leader].protocols]
        g.protocol = next(n for n in names
                          if all(n in dict(m.protocols) for m in g.members.values()))
        g.state = "CompletingRebalance"
        for member in g.members.values():
            member.awaiting_join = False
            member.assignment = b""
            member.last_seen = self.clock()
        self.cluster.lock.notify_all()

    def _wait(self, predicate, g: FakeGroup, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            self._expire(g)
            if predicate():
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.cluster.lock.wait(min(remaining, 0.02))
        return True

    # the APIs --------------------------------------------------------------------------------
    def join(self, r: m.JoinGroupRequest, client_id: str) -> m.JoinGroupResponse:
        with self.cluster.lock:
            g = self._group(r.group_id, create=True)
            self._expire(g)
            if g.members and g.protocol_type and r.protocol_type != g.protocol_type:
                return m.JoinGroupResponse(error_code=errors.InconsistentGroupProtocolError.code)
            member_id = r.member_id
            if r.group_instance_id is not None:
                old = next((mid for mid, x in g.members.items()
                            if x.instance_id == r.group_instance_id), None)
                if not member_id or member_id != old:
                    self.counter += 1
                    member_id = f"{r.group_instance_id}-{self.counter}"
                    if old is not None:
                        prev = g.members.pop(old)
                        if g.leader == old:
                            g.leader = member_id
                        prev.member_id = member_id
                        g.members[member_id] = prev
            elif not member_id:
                self.counter += 1
                member_id = f"{client_id}-{self.counter}"
                g.pending.add(member_id)
                return m.JoinGroupResponse(error_code=errors.MemberIdRequiredError.code,
                                           member_id=member_id)
            elif member_id not in g.members and member_id not in g.pending:
                return m.JoinGroupResponse(error_code=errors.UnknownMemberIdError.code,
                                           member_id=member_id)
            g.pending.discard(member_id)
            member = g.members.get(member_id)
            protocols = [(p.name, p.metadata) for p in r.protocols]
            if member is None:
                member = g.members[member_id] = FakeMember(
                    member_id, r.group_instance_id, client_id, "/127.0.0.1",
                    r.session_timeout_ms, r.rebalance_timeout_ms, protocols)
                self._prepare(g)
            elif member.protocols != protocols or g.state in ("Stable",
                                                               "CompletingRebalance"):
                member.protocols = protocols
                self._prepare(g)
            g.protocol_type = r.protocol_type
            member.awaiting_join = True
            member.last_seen = self.clock()
            if g.state == "Empty":
                self._prepare(g)
            generation = g.generation
            self._try_complete_join(g)
            self._wait(lambda: g.generation > generation or member_id not in g.members, g,
                       member.rebalance_s + 1)
            if member_id not in g.members or g.generation == generation:
                return m.JoinGroupResponse(error_code=errors.UnknownMemberIdError.code)
            members = ([m.JoinGroupMember(mid, x.instance_id, dict(x.protocols)[g.protocol])
                        for mid, x in g.members.items()] if member_id == g.leader else [])
            return m.JoinGroupResponse(error_code=0, generation_id=g.generation,
                                       protocol_type=g.protocol_type, protocol_name=g.protocol,
                                       leader=g.leader, member_id=member_id, members=members)

    def _check_member(self, g, generation, member_id):
        if g is None or member_id not in g.members:
            return errors.UnknownMemberIdError.code
        if generation != g.generation:
            return errors.IllegalGenerationError.code
        return 0

    def sync(self, r: m.SyncGroupRequest) -> m.SyncGroupResponse:
        with self.cluster.lock:
            g = self._group(r.group_id)
            code = self._check_member(g, r.generation_id, r.member_id)
            if code:
                return m.SyncGroupResponse(error_code=code)
            if g.state == "PreparingRebalance":
                return m.SyncGroupResponse(error_code=errors.RebalanceInProgressError.code)
            g.members[r.member_id].last_seen = self.clock()
            if r.member_id == g.leader and g.state == "CompletingRebalance":
                given = {a.member_id: a.assignment for a in r.assignments}
                for mid, member in g.members.items():
                    member.assignment = given.get(mid, b"")
                g.state = "Stable"
                self.cluster.lock.notify_all()
            generation = g.generation
            self._wait(lambda: g.state != "CompletingRebalance" or g.generation != generation,
                       g, g.members[r.member_id].session_s)
            if g.generation != generation or r.member_id not in g.members \
                    or g.state != "Stable":
                return m.SyncGroupResponse(error_code=errors.RebalanceInProgressError.code)
            g.members[r.member_id].last_seen = self.clock()
            return m.SyncGroupResponse(error_code=0, protocol_type=g.protocol_type,
                                       protocol_name=g.protocol,
                                       assignment=g.members[r.member_id].assignment)

    def heartbeat(self, r: m.HeartbeatRequest) -> m.HeartbeatResponse:
        with self.cluster.lock:
            g = self._group(r.group_id)
            if g is not None:
                self._expire(g)
            code = self._check_member(g, r.generation_id, r.member_id)
            if code == 0:
                g.members[r.member_id].last_seen = self.clock()
                if g.state == "PreparingRebalance":
                    code = errors.RebalanceInProgressError.code
            return m.HeartbeatResponse(error_code=code)

    def leave(self, r: m.LeaveGroupRequest) -> m.LeaveGroupResponse:
        with self.cluster.lock:
            g = self._group(r.group_id)
            out = []
            for x in r.members:
                mid = x.member_id or next((k for k, v in (g.members.items() if g else ())
                                           if v.instance_id == x.group_instance_id), "")
                if g is None or mid not in g.members:
                    out.append(m.LeaveGroupMemberResponse(x.member_id, x.group_instance_id,
                                                          errors.UnknownMemberIdError.code))
                    continue
                self._remove(g, mid)
                out.append(m.LeaveGroupMemberResponse(mid, x.group_instance_id, 0))
            return m.LeaveGroupResponse(members=out)

    def commit(self, r: m.OffsetCommitRequest) -> m.OffsetCommitResponse:
        with self.cluster.lock:
            g = self._group(r.group_id, create=True)
            self._expire(g)
            if r.generation_id < 0 and not g.members:
                code = 0
            else:
                code = self._check_member(g, r.generation_id, r.member_id)
                if code == 0 and g.state == "CompletingRebalance":
                    code = errors.RebalanceInProgressError.code
            topics = []
            for t in r.topics:
                parts = []
                for p in t.partitions:
                    if code == 0:
                        g.offsets[(t.topic, p.partition)] = (p.committed_offset,
                                                             p.committed_leader_epoch,
                                                             p.committed_metadata)
                    parts.append(m.OffsetCommitPartitionResponse(p.partition, code))
                topics.append(m.OffsetCommitTopicResponse(t.topic, parts))
            return m.OffsetCommitResponse(topics=topics)

    def fetch(self, r: m.OffsetFetchRequest) -> m.OffsetFetchResponse:
        with self.cluster.lock:
            g = self._group(r.group_id)
            offsets = g.offsets if g is not None else {}
            wanted = ([(t.topic, p) for t in r.topics for p in t.partitions]
                      if r.topics is not None else sorted(offsets))
            by_topic: dict = {}
            for tp in wanted:
                off, epoch, md = offsets.get(tp, (-1, -1, None))
                by_topic.setdefault(tp[0], []).append(
                    m.OffsetFetchPartitionResponse(tp[1], off, epoch, md, 0))
            return m.OffsetFetchResponse(topics=[m.OffsetFetchTopicResponse(t, ps)
                                                 for t, ps in by_topic.items()])

    def list_groups(self, r: m.ListGroupsRequest) -> m.ListGroupsResponse:
        with self.cluster.lock:
            return m.ListGroupsResponse(groups=[
                m.ListedGroup(g.group_id, g.protocol_type, g.state)
                for g in self.groups.values()
                if not r.states_filter or g.state in r.states_filter])

    def describe_groups(self, r: m.DescribeGroupsRequest) -> m.DescribeGroupsResponse:
        with self.cluster.lock:
            out = []
            for gid in r.groups:
                g = self.groups.get(gid)
                if g is None:
                    out.append(m.DescribedGroup(0, gid, "Dead", "", "", []))
                    continue
                self._expire(g)
                out.append(m.DescribedGroup(0, gid, g.state, g.protocol_type, g.protocol or "", [
                    m.DescribedGroupMember(mid, x.instance_id, x.client_id, x.host,
                                           dict(x.protocols).get(g.protocol, b""),
                                           x.assignment)
                    for mid, x in g.members.items()]))
            return m.DescribeGroupsResponse(groups=out)

    def delete_groups(self, r: m.DeleteGroupsRequest) -> m.DeleteGroupsResponse:
        with self.cluster.lock:
            out = []
            for gid in r.groups_names:
                g = self.groups.get(gid)
                if g is None:
                    out.append(m.DeletableGroupResult(gid, errors.GroupIdNotFoundError.code))
                elif g.members:
                    out.append(m.DeletableGroupResult(gid, errors.NonEmptyGroupError.code))
                else:
                    del self.groups[gid]
                    out.append(m.DeletableGroupResult(gid, 0))
            return m.DeleteGroupsResponse(results=out)


class FakeCluster:
    def __init__(self, brokers: int = 1, auto_create: bool = True, default_partitions: int = 1):
        self.lock = threading.Condition()
        self.topics: dict[str, list[FakePartition]] = {}
        self.lna_rounds: dict[str, int] = {}
        self.auto_create = auto_create
        self.default_partitions = default_partitions
        self.leader_not_available_rounds = 0
        self.produce_errors: dict[tuple, list[int]] = {}
        self.fetch_errors: dict[tuple, list[int]] = {}
        self.fetch_truncate = False
        self.request_log: list[tuple[int, int, object]] = []
        self.cluster_id = "fake-cluster"
        self.coordinator_id = 1
        self.coordinator_errors: list[int] = []
        self.groups = FakeGroupCoordinator(self)
        self.brokers = [FakeBroker(self, node_id) for node_id in range(1, brokers + 1)]
        self.controller_id = 1
        for b in self.brokers:
            b.start()

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers)

    def broker(self, node_id: int) -> "FakeBroker":
        return self.brokers[node_id - 1]

    def create_topic(self, name: str, partitions: int = 1, replication: int = 1,
                     assignments: dict | None = None) -> None:
        with self.lock:
            ids = [b.node_id for b in self.brokers]
            if assignments:
                parts = [FakePartition(assignments[p][0], list(assignments[p]))
                         for p in sorted(assignments)]
            else:
                parts = [FakePartition(ids[p % len(ids)],
                                       [ids[(p + k) % len(ids)] for k in range(replication)])
                         for p in range(partitions)]
            self.topics[name] = parts
            self.lock.notify_all()

    def partition(self, topic: str, p: int) -> FakePartition:
        return self.topics[topic][p]

    def values(self, topic: str, p: int) -> list:
        return [r.value for r in self.partition(topic, p).records()]

    def count(self, api_key: int) -> int:
        return sum(1 for _n, k, _r in self.request_log if k == api_key)

    def close(self) -> None:
        for b in self.brokers:
            b.stop()


class FakeBroker:
    def __init__(self, cluster: FakeCluster, node_id: int):
        self.cluster = cluster
        self.node_id = node_id
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.running = True
        self.paused = threading.Event()
        self.paused.set()

    def start(self) -> None:
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self) -> None:
        self.running = False
        try:
            self.sock.close()
        except OSError:
            pass
        for c in list(self.conns):
            try:
                c.shutdown(socket.SHUT_RDWR)
                c.close()
            except OSError:
                pass

    def drop_connections(self) -> None:
        for c in list(self.conns):
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _accept(self) -> None:
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        decoder = FrameDecoder()
        try:
            while self.running:
                data = conn.recv(1 << 20)
                if not data:
                    return
                for payload in decoder.feed(data):
                    header, request = envelope.decode_request(payload)
                    self.paused.wait()
                    with self.cluster.lock:
                        self.cluster.request_log.append((self.node_id, header.api_key, request))
                    response = self.handle(header.api_key, request, header.client_id)
                    if response is None:
                        continue
                    conn.sendall(envelope.encode_response(header.correlation_id, response))
        except OSError:
            return
        finally:
            try:
                conn.close()
            except OSError:
                pass

    # --- handlers ---------------------------------------------------------------------------
    def handle(self, api_key: int, request, client_id: str | None = None):
        groups = self.cluster.groups
        group_apis = {
            ApiKey.JOIN_GROUP: lambda r: groups.join(r, client_id or ""),
            ApiKey.SYNC_GROUP: groups.sync,
            ApiKey.HEARTBEAT: groups.heartbeat,
            ApiKey.LEAVE_GROUP: groups.leave,
            ApiKey.OFFSET_COMMIT: groups.commit,
            ApiKey.OFFSET_FETCH: groups.fetch,
            ApiKey.DESCRIBE_GROUPS: groups.describe_groups,
            ApiKey.DELETE_GROUPS: groups.delete_groups,
        }
        if api_key in group_apis:
            if self.node_id != self.cluster.coordinator_id:
                return request.error_response(errors.NotCoordinatorError.code)
            return group_apis[api_key](request)
        handler = {
            ApiKey.FIND_COORDINATOR: self.find_coordinator,
            ApiKey.LIST_GROUPS: lambda r: (groups.list_groups(r)
                                           if self.node_id == self.cluster.coordinator_id
                                           else m.ListGroupsResponse()),
            ApiKey.API_VERSIONS: lambda r: m.ApiVersionsResponse(
                api_versions=m.supported_versions()),
            ApiKey.METADATA: self.metadata,
            ApiKey.PRODUCE: self.produce,
            ApiKey.FETCH: self.fetch,
            ApiKey.LIST_OFFSETS: self.list_offsets,
            ApiKey.CREATE_TOPICS: self.create_topics,
            ApiKey.DELETE_TOPICS: self.delete_topics,
            ApiKey.INIT_PRODUCER_ID: lambda r: m.InitProducerIdResponse(producer_id=1000,
                                                                        producer_epoch=0),
        }.get(api_key)
        if handler is None:
            return m.RequestErrorResponse(error_code=errors.UnsupportedVersionError.code,
                                          error_message="not served by the fake")
        return handler(request)

    def find_coordinator(self, request: m.FindCoordinatorRequest):
        c = self.cluster
        with c.lock:
            if c.coordinator_errors:
                return m.FindCoordinatorResponse(error_code=c.coordinator_errors.pop(0))
            b = c.broker(c.coordinator_id)
            return m.FindCoordinatorResponse(node_id=b.node_id, host="127.0.0.1", port=b.port)

    def metadata(self, request: m.MetadataRequest):
        c = self.cluster
        with c.lock:
            names = sorted(c.topics) if request.topics is None else request.topics
            topics = []
            for name in names:
                if name not in c.topics:
                    if request.allow_auto_topic_creation and c.auto_create:
                        c.topics[name] = [FakePartition(c.brokers[p % len(c.brokers)].node_id,
                                                        [c.brokers[p % len(c.brokers)].node_id])
                                          for p in range(c.default_partitions)]
                        c.lna_rounds[name] = c.leader_not_available_rounds
                        topics.append(m.MetadataTopic(errors.LeaderNotAvailableError.code,
                                                      name, []))
                    else:
                        topics.append(m.MetadataTopic(errors.UnknownTopicOrPartitionError.code,
                                                      name, []))
                    continue
                if c.lna_rounds.get(name, 0) > 0:
                    c.lna_rounds[name] -= 1
                    topics.append(m.MetadataTopic(errors.LeaderNotAvailableError.code, name, []))
                    continue
                parts = [m.MetadataPartition(0, i, p.leader, 0, p.replicas, p.replicas, [])
                         for i, p in enumerate(c.topics[name])]
                topics.append(m.MetadataTopic(0, name, parts))
            return m.MetadataResponse(
                brokers=[m.MetadataBroker(b.node_id, "127.0.0.1", b.port) for b in c.brokers],
                cluster_id=c.cluster_id, controller_id=c.controller_id, topics=topics)

    def _leader_partition(self, topic: str, p: int) -> FakePartition:
        parts = self.cluster.topics.get(topic)
        if parts is None or not 0 <= p < len(parts):
            raise errors.UnknownTopicOrPartitionError(f"{topic}-{p}")
        part = parts[p]
        if part.leader != self.node_id:
            raise errors.NotLeaderForPartitionError(f"{topic}-{p} is led by {part.leader}")
        return part

    def produce(self, request: m.ProduceRequest):
        c = self.cluster
        out: dict = {}
        with c.lock:
            for topic, parts in request.topic_data.items():
                res = out.setdefault(topic, {})
                for p, data in parts.items():
                    injected = c.produce_errors.get((topic, p))
                    if injected:
                        res[p] = m.ProducePartitionResponse(injected.pop(0), "injected")
                        continue
                    try:
                        part = self._leader_partition(topic, p)
                        base = part.append(data)
                        res[p] = m.ProducePartitionResponse(0, None, base, -1, part.log_start)
                    except errors.KafkaError as exc:
                        res[p] = m.ProducePartitionResponse(errors.code_of(exc), exc.message)
            c.lock.notify_all()
        if request.acks == 0:
            return None
        return m.ProduceResponse(responses=out)

    def _read_fetch(self, request: m.FetchRequest):
        c = self.cluster
        total = 0
        topics = []
        for t in request.topics:
            parts = []
            for fp in t.partitions:
                injected = c.fetch_errors.get((t.topic, fp.partition))
                if injected:
                    parts.append(m.FetchPartitionResponse(fp.partition, injected.pop(0)))
                    continue
                try:
                    part = self._leader_partition(t.topic, fp.partition)
                except errors.KafkaError as exc:
                    parts.append(m.FetchPartitionResponse(fp.partition, errors.code_of(exc)))
                    continue
                if fp.fetch_offset < part.log_start or fp.fetch_offset > part.leo:
                    parts.append(m.FetchPartitionResponse(
                        fp.partition, errors.OffsetOutOfRangeError.code))
                    continue
                data = part.read(fp.fetch_offset, fp.partition_max_bytes, c.fetch_truncate)
                total += len(data)
                parts.append(m.FetchPartitionResponse(fp.partition, 0, part.leo, part.leo,
                                                      part.log_start, data))
            topics.append(m.FetchTopicResponse(t.topic, parts))
        return m.FetchResponse(responses=topics), total

    def fetch(self, request: m.FetchRequest):
        c = self.cluster
        deadline = time.monotonic() + request.max_wait_ms / 1000
        with c.lock:
            while True:
                response, total = self._read_fetch(request)
                errs = any(p.error_code for t in response.responses for p in t.partitions)
                remaining = deadline - time.monotonic()
                if total >= request.min_bytes or errs or remaining <= 0:
                    return response
                c.lock.wait(remaining)

    def list_offsets(self, request: m.ListOffsetsRequest):
        c = self.cluster
        with c.lock:
            topics = []
            for t in request.topics:
                parts = []
                for lp in t.partitions:
                    try:
                        part = self._leader_partition(t.topic, lp.partition)
                    except errors.KafkaError as exc:
                        parts.append(m.ListOffsetsPartitionResponse(lp.partition,
                                                                    errors.code_of(exc)))
                        continue
                    if lp.timestamp == m.EARLIEST_TIMESTAMP:
                        off, ts = part.log_start, -1
                    elif lp.timestamp == m.LATEST_TIMESTAMP:
                        off, ts = part.leo, -1
                    else:
                        off, ts = part.offset_for_time(lp.timestamp)
                    parts.append(m.ListOffsetsPartitionResponse(lp.partition, 0, ts, off, 0))
                topics.append(m.ListOffsetsTopicResponse(t.topic, parts))
            return m.ListOffsetsResponse(topics=topics)

    def create_topics(self, request: m.CreateTopicsRequest):
        c = self.cluster
        if self.node_id != c.controller_id:
            return request.error_response(errors.NotControllerError.code, "not the controller")
        results = []
        for t in request.topics:
            if t.name in c.topics:
                results.append(m.CreatableTopicResult(t.name, errors.TopicAlreadyExistsError.code,
                                                      f"topic '{t.name}' already exists"))
                continue
            if not request.validate_only:
                if t.assignments:
                    c.create_topic(t.name, assignments=t.assignments)
                else:
                    n = t.num_partitions if t.num_partitions > 0 else c.default_partitions
                    rf = t.replication_factor if t.replication_factor > 0 else 1
                    if rf > len(c.brokers):
                        results.append(m.CreatableTopicResult(
                            t.name, errors.InvalidReplicationFactorError.code,
                            f"replication factor {rf} larger than {len(c.brokers)} brokers"))
                        continue
                    c.create_topic(t.name, n, rf)
            results.append(m.CreatableTopicResult(t.name, 0, None))
        return m.CreateTopicsResponse(topics=results)

    def delete_topics(self, request: m.DeleteTopicsRequest):
        c = self.cluster
        results = []
        with c.lock:
            for name in request.topic_names:
                if c.topics.pop(name, None) is None:
                    results.append(m.DeletableTopicResult(
                        name, errors.UnknownTopicOrPartitionError.code, "no such topic"))
                else:
                    results.append(m.DeletableTopicResult(name, 0, None))
        return m.DeleteTopicsResponse(responses=results)


@pytest.fixture
def fake_cluster():
    cluster = FakeCluster(1)
    yield cluster
    cluster.close()


# --- the fake's own sanity checks ------------------------------------------------------------

def test_fake_answers_metadata_and_produce(fake_cluster):
    from kafkalite.client.connection import BrokerConnection
    from kafkalite.record import build_batch

    fake_cluster.create_topic("t", 2)
    conn = BrokerConnection("127.0.0.1", fake_cluster.brokers[0].port)
    meta = conn.request(m.MetadataRequest(topics=["t"]))
    assert [p.partition for p in meta.topics[0].partitions] == [0, 1]
    batch = build_batch([(1, None, b"a", None), (2, None, b"b", None)])
    resp = conn.request(m.ProduceRequest(acks=1, topic_data={"t": {1: batch}}))
    assert resp.responses["t"][1].base_offset == 0
    resp = conn.request(m.ProduceRequest(acks=1, topic_data={"t": {1: batch}}))
    assert resp.responses["t"][1].base_offset == 2
    assert fake_cluster.values("t", 1) == [b"a", b"b", b"a", b"b"]
    conn.close()
