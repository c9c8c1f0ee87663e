"""Native-protocol side of the broker fuzz (tests/system/test_protocol_fuzz.py,
bench/protocol_fuzz.py; no test functions here): mutations of native_fuzz_seeds' frames, which
cases are left out, and what a right answer is.

Mutations work on the bytes (bit flips, byte sets, truncations, insertions, deletions, splices
of two seeds, random bytes after the header) and on the msgpack value (an integer field set to an
edge or to a value that matters here: a broker id, the controller's epoch or a broker epoch, one
off; a partition-keyed map entry moved or copied to another partition, e.g. 127; the API key
swapped; the version changed; a field dropped, given another type, or grafted
from another seed; a list element repeated; an array, map, str or bin header claiming 2**32-1
items; the body nested 100,000 deep; a record batch's header bytes changed) and on the frame
(length prefixes that lie, pipelining between valid requests).

A right answer (``check_native``): the broker reads each frame as ``kafkalite.protocol`` does. A
frame whose envelope is unreadable closes the connection, unanswered; a readable header with a
bad body, unknown API or version gets a RequestErrorResponse with its correlation id; a request
that expects an answer gets one that decodes as its API's response (or a RequestErrorResponse);
Produce with acks=0 gets none; answers come in request order.
"""

from __future__ import annotations

import random
import struct

import msgpack

from kafkalite.errors import InvalidRequestError, UnsupportedVersionError
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.envelope import (decode_request_envelope, decode_response_envelope,
                                         parse_request_body, parse_response_body)
from kafkalite.protocol.messages import RequestErrorResponse

from controller_frames import mutate_fields
from fuzz_frames import NATIVE, Case, complete_frames, frame, sniff
from fuzz_kio import MAX_PARTITIONS_ASKED
from native_fuzz_seeds import ControllerView, Seed

EDGE_INTS = [0, 1, 2, 3, -1, -2, 99, 127, 128, 255, 256, 32767, 32768, -32768, -32769,
             (1 << 31) - 1, 1 << 31, -(1 << 31), -(1 << 31) - 1, (1 << 63) - 1, -(1 << 63),
             (1 << 64) - 1]
KNOWN_KEYS = [int(k) for k in ApiKey]
OWN_CONTROLLER_SHARE = 0.05     # of native cases, made from the controller's own frames
_PACK = dict(use_bin_type=True)
_UNPACK = dict(raw=False, strict_map_key=False)


def context_ints(view: ControllerView) -> list[int]:
    """Values a forged field would want: broker ids, the controller's epoch and the brokers'
    epochs, and their neighbours."""
    values = {view.controller_id, view.epoch - 1, view.epoch, view.epoch + 1}
    for broker_id, epoch in view.broker_epochs.items():
        values |= {broker_id, epoch - 1, epoch, epoch + 1}
    return sorted(values)


# --- mutations -----------------------------------------------------------------------------------

def _nodes(value, path=()):
    """(path, node) for every node below the envelope's list (the envelope itself excluded)."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield path + (i,), item
            yield from _nodes(item, path + (i,))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield path + (key,), item
            yield from _nodes(item, path + (key,))


def _set(root, path, new):
    node = root
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new


def _parent(root, path):
    node = root
    for key in path[:-1]:
        node = node[key]
    return node


def _byte_mutation(rnd: random.Random, payload: bytes, others: list[bytes]) -> tuple[str, bytes]:
    data = bytearray(payload)
    kind = rnd.choices(["flip", "set", "truncate", "insert", "delete", "splice", "fill"],
                       weights=[30, 12, 12, 6, 6, 10, 3])[0]

    def where():   # mostly past the array header, so the connection stays native
        low = 1 if rnd.random() < 0.9 and len(data) > 2 else 0
        return rnd.randrange(low, len(data)) if len(data) > low else 0

    if kind == "flip":
        for _ in range(rnd.randint(1, 6)):
            data[where()] ^= 1 << rnd.randrange(8)
    elif kind == "set":
        for _ in range(rnd.randint(1, 4)):
            data[where()] = rnd.choice([0x00, 0xFF, 0xC0, 0xC1, 0xC3, 0xDD, 0xDF, 0x7F, 0x80,
                                        rnd.randrange(256)])
    elif kind == "truncate":
        del data[rnd.randrange(len(data)):]
    elif kind == "insert":
        at = where()
        data[at:at] = rnd.randbytes(rnd.randint(1, 16))
    elif kind == "delete":
        at = where()
        del data[at:at + rnd.randint(1, 8)]
    elif kind == "splice":
        other = rnd.choice(others)
        data = data[:rnd.randrange(len(data) + 1)] + other[rnd.randrange(len(other)):]
    else:   # "fill": the array header and API key, then random bytes
        data = data[:2] + rnd.randbytes(rnd.randrange(64))
    return kind, bytes(data)


def _value_mutation(rnd: random.Random, value: list, others: list[list],
                    ints: list[int]) -> tuple[str, bytes]:
    """A msgpack-aware mutation of the decoded request ``value`` (changed in place)."""
    kind = rnd.choices(["int", "key", "api", "version", "drop", "retype", "graft", "dup",
                        "count", "nest", "batch", "extra"],
                       weights=[30, 6, 8, 5, 6, 10, 8, 6, 6, 2, 6, 2])[0]
    nodes = list(_nodes(value))
    if kind == "int":
        spots = [(p, n) for p, n in nodes if type(n) is int and p != (0,)]
        if spots:
            for _ in range(rnd.choice([1, 1, 1, 2, 3])):
                path, old = rnd.choice(spots)
                _set(value, path, rnd.choice([
                    rnd.choice(EDGE_INTS), rnd.choice(ints) if ints else 0, old + 1, old - 1,
                    -old, old * 2]))
    elif kind == "key":      # a map keyed by partition moves an entry to another partition
        maps = [n for _, n in nodes if isinstance(n, dict) and any(type(k) is int for k in n)]
        if maps:
            chosen = rnd.choice(maps)
            old = rnd.choice([k for k in chosen if type(k) is int])
            chosen[rnd.choice([127, old + 1, len(chosen), -1, 1 << 31, rnd.choice(EDGE_INTS)])] = (
                chosen.pop(old) if rnd.random() < 0.7 else chosen[old])
    elif kind == "api":
        value[0] = rnd.choice(KNOWN_KEYS + [17, 99, 255, -1, 32767, 70000])
    elif kind == "version":
        value[1] = rnd.choice([1, 2, -1, 32767, 70000, None, "0"])
    elif kind == "drop":
        maps = [(p, n) for p, n in nodes if isinstance(n, dict) and n]
        if maps:
            _, chosen = rnd.choice(maps)
            del chosen[rnd.choice(list(chosen))]
        else:
            value.pop(rnd.randrange(len(value)))
    elif kind == "retype" and nodes:
        path, _ = rnd.choice(nodes)
        _set(value, path, rnd.choice([None, "", "x" * 300, "é", b"", b"\x00" * 8, [], {}, True,
                                      1.5, [None], {"": None}, -1, 1 << 40]))
    elif kind == "graft" and nodes and others:
        donor = [n for _, n in _nodes(rnd.choice(others))]
        if donor:
            path, _ = rnd.choice(nodes)
            _set(value, path, rnd.choice(donor))
    elif kind == "dup":
        lists = [n for _, n in nodes if isinstance(n, list) and n]
        if lists:
            chosen = rnd.choice(lists)
            chosen.insert(rnd.randrange(len(chosen) + 1), rnd.choice(chosen))
    elif kind == "count" and nodes:     # a header claiming 2**32-1 items, with nothing behind
        path, _ = rnd.choice(nodes)
        marker = "\x00fz-count\x00"
        _set(value, path, marker)
        packed = msgpack.packb(value, **_PACK)
        return "msgpack-count", packed.replace(msgpack.packb(marker, **_PACK), rnd.choice(
            [b"\xdd\xff\xff\xff\xff", b"\xdf\xff\xff\xff\xff", b"\xdb\xff\xff\xff\xff",
             b"\xc6\xff\xff\xff\xff", b"\xdc\xff\xff"]), 1)
    elif kind == "nest":                 # the body nested far deeper than any parser's stack
        head = msgpack.packb(value[:4], **_PACK)[1:]
        depth = rnd.choice([100, 2000, 100_000])
        return "msgpack-nest", b"\x95" + head + b"\x91" * depth + b"\xc0"
    elif kind == "batch":
        spots = [(p, n) for p, n in nodes if type(n) is bytes and len(n) >= 61]
        if spots:
            path, batch = rnd.choice(spots)
            data = bytearray(batch)
            field_at, width = rnd.choice([(0, 8), (8, 4), (12, 4), (16, 1), (21, 2), (23, 4),
                                          (57, 4)])   # offset, length, epoch, magic, attrs,
            new = rnd.choice(EDGE_INTS) & ((1 << (8 * width)) - 1)  # last delta, count
            data[field_at:field_at + width] = new.to_bytes(width, "big")
            _set(value, path, bytes(data))
    elif kind == "extra" and isinstance(value[4], dict):
        value[4]["fz_unknown"] = [1, "two", None]
    return f"msgpack-{kind}", msgpack.packb(value, **_PACK)


def mutate_native(rnd: random.Random, payload: bytes, others: list[bytes],
                  ints: list[int]) -> tuple[str, bytes]:
    """(kind, mutated payload) for one seed payload."""
    if rnd.random() < 0.45:
        return _byte_mutation(rnd, payload, others)
    value = msgpack.unpackb(payload, **_UNPACK)
    donors = [msgpack.unpackb(rnd.choice(others), **_UNPACK)] if others else []
    try:
        return _value_mutation(rnd, value, donors, ints)
    except (ValueError, OverflowError, TypeError):   # not packable: mutate the bytes instead
        return _byte_mutation(rnd, payload, others)


def make_native_case(rnd: random.Random, seeds: list[Seed], ints: list[int],
                     probes: tuple[bytes, bytes], view: ControllerView | None = None) -> Case:
    """One native case; ``probes`` are two valid requests to pipeline around a mutated one;
    ``view``: what ZooKeeper holds, for the field mutations of recorded controller frames."""
    own = [s for s in seeds if s.recorded_controller]
    # the controller's own frames are few among the seeds: one case in 20 starts from one
    seed = rnd.choice(own) if own and rnd.random() < OWN_CONTROLLER_SHARE else rnd.choice(seeds)
    payloads = [s.payload for s in seeds if s.controller == seed.controller]
    broker_id = seed.broker_id if seed.broker_id is not None and rnd.random() < 0.8 else None
    if seed.recorded_controller and view is not None and rnd.random() < 0.7:
        kind, data, target = mutate_fields(rnd, seed.payload, view)
        claim = kind[kind.index("(") + 1:-1]
        kind = kind[:kind.index(" (")]
        if rnd.random() < 0.15:
            return Case(NATIVE, f"pipelined-{kind}", frame(probes[0]) + frame(data)
                        + frame(probes[1]), target, f"{seed.name} ({claim})")
        return Case(NATIVE, kind, frame(data), target, f"{seed.name} ({claim})")
    roll = rnd.random()

    def case(kind, data):
        return Case(NATIVE, kind, data, broker_id, seed.name)

    if roll < 0.04:
        return case("valid", frame(seed.payload))
    if roll < 0.10:
        lie = rnd.choice(["longer", "shorter", "huge", "negative", "zero", "max"])
        n = len(seed.payload)
        length = {"longer": n + rnd.randint(1, 1000), "shorter": rnd.randrange(n),
                  "huge": rnd.choice([1 << 28, 200_000_000, 104_857_601]),
                  "negative": rnd.choice([-1, -(1 << 31), -4]), "zero": 0,
                  "max": 0x7FFFFFFF}[lie]
        return case(f"length-{lie}", struct.pack(">i", length) + seed.payload)
    if roll < 0.13:      # random bytes behind a msgpack array header
        header = bytes([rnd.choice(b"\x95\x94\xdc")])
        return case("random", frame(header + rnd.randbytes(rnd.randrange(1, 200))))
    if roll < 0.21:
        kind, bad = mutate_native(rnd, seed.payload, payloads, ints)
        return case(f"pipelined-{kind}", frame(probes[0]) + frame(bad) + frame(probes[1]))
    kind, bad = mutate_native(rnd, seed.payload, payloads, ints)
    return case(kind, frame(bad))


# --- cases left out ------------------------------------------------------------------------------

#: open broker bugs the fuzz found, by name: ``(api key, request, broker id, view) -> bool`` says
#: whether a request triggers it. A run may leave their triggers out (``left_out(known=...)``,
#: bench/protocol_fuzz.py --leave-out-known-bug) so that the rest of it still says something
#: while one is unfixed; each entry names its reproduction test, and goes once that passes.
#: (The first one, "forged-controlled-shutdown", is fixed: test_protocol_fuzz.py keeps its test.)
KNOWN_BUGS: dict = {}


#: requests that legitimately delete or change a topic's records or partitions: never aimed at
#: a protected (live) topic, whatever a mutation made of them
DESTRUCTIVE = frozenset({ApiKey.DELETE_TOPICS, ApiKey.DELETE_RECORDS, ApiKey.ALTER_CONFIGS,
                         ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.CREATE_PARTITIONS})


def _strings(value):
    if type(value) is str:
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)


def left_out(case_frames: list[bytes], broker_id: int, view: ControllerView,
             known: frozenset = frozenset(), protected: frozenset = frozenset()) -> str | None:
    """Why a native case must not be sent to ``broker_id``, or None. Three reasons (and the
    ``known`` bugs of KNOWN_BUGS, by name):

    - "impersonation": a controller request with exactly the identity ZooKeeper backs
      (controller, epoch, and this broker's epoch), or a ControlledShutdown for a broker at its
      registered epoch sent to the controller: indistinguishable from the real thing, so obeying
      it is right (a mutation of a near-miss seed can land on it) -- except a LeaderAndIsr whose
      every partition state is stale, which Kafka ignores (``_all_stale``): that one is sent;
    - "resource-heavy": a CreateTopics or CreatePartitions asking for more than
      MAX_PARTITIONS_ASKED partitions (see fuzz_kio);
    - "aimed at a live topic": a DESTRUCTIVE request naming a ``protected`` topic (a legitimate
      request that deletes the live clients' records)."""
    for payload in case_frames:
        try:
            header, body = decode_request_envelope(payload)
        except InvalidRequestError:
            return None                # the broker closes here
        try:
            request = parse_request_body(header, body)
        except (InvalidRequestError, UnsupportedVersionError):
            continue
        key = header.api_key
        if key in DESTRUCTIVE and protected and not protected.isdisjoint(_strings(body)):
            return "aimed at a live topic"
        for bug in known:
            if KNOWN_BUGS[bug](key, request, broker_id, view):
                return f"known bug {bug}"
        if key in (ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA):
            if (request.controller_id, request.controller_epoch, request.broker_epoch) == (
                    view.controller_id, view.epoch, view.broker_epochs.get(broker_id)) and not (
                    key == ApiKey.LEADER_AND_ISR and _all_stale(request, broker_id, view)):
                return "impersonation"
        elif key == ApiKey.CONTROLLED_SHUTDOWN:
            if (broker_id == view.controller_id
                    and view.broker_epochs.get(request.broker_id) == request.broker_epoch):
                return "impersonation"
        elif key == ApiKey.CREATE_TOPICS:
            if any(t.num_partitions > MAX_PARTITIONS_ASKED
                   or len(t.assignments) > MAX_PARTITIONS_ASKED for t in request.topics):
                return "resource-heavy"
        elif key == ApiKey.CREATE_PARTITIONS:
            if any(t.count > MAX_PARTITIONS_ASKED for t in request.topics):
                return "resource-heavy"
    return None


def _all_stale(request, broker_id: int, view: ControllerView) -> bool:
    """Whether every partition state of a LeaderAndIsr names a partition ``broker_id`` hosts
    (a replica in ZooKeeper) at a leader epoch not above ZooKeeper's: Kafka 2.8 ignores each such
    state (ReplicaManager.becomeLeaderOrFollower), so even the exact identity changes nothing.
    The issue's case: the controller's own LeaderAndIsr replayed with ISR [33] at epoch 0."""
    for state in request.partition_states:
        known = view.partitions.get((state.topic, state.partition))
        if known is None or broker_id not in known[1] or state.leader_epoch > known[0]:
            return False
    return bool(request.partition_states)


# --- what a right answer is ----------------------------------------------------------------------

def expected_answers(sent: list[bytes]) -> list[tuple]:
    """(header, request or None when the body is refused) for each frame the broker answers,
    in order; reading stops at the first unreadable envelope (the broker closes there)."""
    expected = []
    for payload in sent:
        try:
            header, body = decode_request_envelope(payload)
        except InvalidRequestError:
            break
        try:
            request = parse_request_body(header, body)
        except (InvalidRequestError, UnsupportedVersionError):
            expected.append((header, None))
            continue
        if request.expects_response():
            expected.append((header, request))
    return expected


def envelope_unreadable(sent: list[bytes]) -> bool:
    """Whether a frame's envelope cannot be read: the broker closes the connection there."""
    for payload in sent:
        try:
            decode_request_envelope(payload)
        except InvalidRequestError:
            return True
    return False


def check_native(sent: list[bytes], frames: list[bytes]) -> str | None:
    expected = expected_answers(sent)
    if len(frames) > len(expected):
        return f"{len(frames)} answers to {len(expected)} answerable requests"
    for response, (header, request) in zip(frames, expected):
        name = ApiKey.name_of(header.api_key)
        try:
            correlation_id, body = decode_response_envelope(response)
        except InvalidRequestError as exc:
            return f"a response to {name} that does not decode: {exc}"
        if correlation_id != header.correlation_id:
            return (f"correlation id {correlation_id} answers {name} with "
                    f"{header.correlation_id} (out of order or made up)")
        if request is None:
            if not RequestErrorResponse.is_request_error(body):
                return f"a refused {name} request answered with {str(body)[:120]}"
            continue
        try:
            parse_response_body(header.api_key, body, header.api_version)
        except Exception as exc:  # noqa: BLE001
            return f"{name} response does not decode: {type(exc).__name__}: {exc}"
    return None


def is_native_connection(data: bytes) -> bool:
    sent = complete_frames(data)
    return bool(sent) and sniff(sent[0]) == NATIVE
