"""What Kafka 2.8 does with each Kafka-protocol frame of a fuzz case, decided by kio's own
schema-generated readers, not by the broker's codec (tests/system/fuzz_runner.py; no test
functions here).

Kafka's processor reads one frame at a time and parses it (``RequestContext.parseRequest``); a
frame it cannot parse closes the connection, and so does an API it does not know or a version it
does not serve, except ApiVersions, which is answered (v0, UNSUPPORTED_VERSION). A frame that
parses is served and answered, except a Produce with acks=0 (whose failure also closes the
connection). So each frame gets one verdict:

- ``answer``: kio reads the header and the body; the broker must answer it;
- ``no-answer``: a Produce with acks=0 that kio reads: no answer; a close is allowed there
  (Kafka closes when it fails), else the frames after it are judged as usual;
- ``close``: an unknown API, a version the broker does not serve, or a body kio cannot read (or
  reads only by accepting a null where the schema forbids one, which Kafka refuses): the broker
  closes here, and reads nothing after it.

kio's native reader sizes an array from its declared count before reading it, so a few bytes
claiming 2**32 elements abort the interpreter: the frames are read in a long-lived child process,
started again past a frame that killed it (that frame is one Kafka's parser refuses: ``close``).

A verdict also says whether the request is resource-heavy (a CreateTopics or CreatePartitions
asking for more than MAX_PARTITIONS_ASKED partitions), which the fuzz leaves out.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import threading
import time
import types
import typing
from functools import lru_cache
from typing import NamedTuple

ANSWER, NO_ANSWER, CLOSE = "answer", "no-answer", "close"
#: a valid CreateTopics or CreatePartitions asking for more partitions than this is a resource
#: question, not malformed input: kafkalite builds every partition's replica assignment on the
#: broker's reactor thread, even for validate_only (2**30 partitions stall the broker for good)
MAX_PARTITIONS_ASKED = 100
API_VERSIONS, PRODUCE, CREATE_TOPICS, CREATE_PARTITIONS = 18, 0, 19, 37
IMPORT_ATTEMPTS = 5
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Verdict(NamedTuple):
    kind: str                     # ANSWER | NO_ANSWER | CLOSE
    api_key: int
    version: int
    correlation_id: int
    heavy: bool = False
    why: str = ""


# --- in the child: kio reads one frame -----------------------------------------------------------

@lru_cache(maxsize=None)
def _request_class(api_key: int, version: int):
    from kio.index import load_request_schema
    return load_request_schema(api_key, version)


@lru_cache(maxsize=None)
def _reader(cls):
    from kio.serial import entity_reader
    return entity_reader(cls)


@lru_cache(maxsize=None)
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def _nullable(hint) -> bool:
    return (typing.get_origin(hint) in (typing.Union, types.UnionType)
            and type(None) in typing.get_args(hint))


def _null_where_forbidden(entity) -> str | None:
    """The first field holding None whose schema type is not nullable (kio reads a null array
    or string anywhere; Kafka refuses one where the schema does not allow it)."""
    import dataclasses

    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if value is None:
            if not _nullable(_hints(type(entity)).get(f.name)):
                return f.name
        elif isinstance(value, tuple):
            for item in value:
                if dataclasses.is_dataclass(item):
                    found = _null_where_forbidden(item)
                    if found:
                        return f"{f.name}.{found}"
        elif dataclasses.is_dataclass(value):
            found = _null_where_forbidden(value)
            if found:
                return f"{f.name}.{found}"
    return None


def verdict(payload: bytes, ranges: dict[int, tuple[int, int]]) -> Verdict:
    """What Kafka does with one frame payload, given the broker's (min, max) version per API."""
    if len(payload) < 8:
        return Verdict(CLOSE, -1, -1, -1, why=f"a {len(payload)}-byte frame")
    api_key, version, cid = struct.unpack_from(">hhi", payload)
    bounds = ranges.get(api_key)
    if bounds is None:
        return Verdict(CLOSE, api_key, version, cid, why="an API the broker does not serve")
    if not bounds[0] <= version <= bounds[1]:
        if api_key == API_VERSIONS:
            return Verdict(ANSWER, api_key, 0, cid, why="ApiVersions answers v0")
        return Verdict(CLOSE, api_key, version, cid, why="a version the broker does not serve")
    try:
        cls = _request_class(api_key, version)
    except Exception:  # noqa: BLE001 - kio has no schema (Fetch v0-v3): not judged
        return Verdict("unjudged", api_key, version, cid, why="no kio schema")
    view = memoryview(payload)
    try:
        header, offset = _reader(cls.__header_schema__)(view, 0)
        body, _ = _reader(cls)(view, offset)
    except Exception as exc:  # noqa: BLE001 - kio raises several kinds for bad bytes
        return Verdict(CLOSE, api_key, version, cid, why=f"kio: {type(exc).__name__}")
    forbidden = _null_where_forbidden(header) or _null_where_forbidden(body)
    if forbidden:
        return Verdict(CLOSE, api_key, version, cid, why=f"null {forbidden}")
    heavy = False
    if api_key == CREATE_TOPICS:
        heavy = any(t.num_partitions > MAX_PARTITIONS_ASKED
                    or len(t.assignments or ()) > MAX_PARTITIONS_ASKED for t in body.topics)
    elif api_key == CREATE_PARTITIONS:
        heavy = any(t.count > MAX_PARTITIONS_ASKED for t in body.topics)
    if api_key == PRODUCE and body.acks == 0:
        return Verdict(NO_ANSWER, api_key, version, cid, heavy)
    return Verdict(ANSWER, api_key, version, cid, heavy)


def _child_main(ranges_json: str) -> None:
    ranges = {int(k): tuple(v) for k, v in json.loads(ranges_json).items()}
    print("ready", flush=True)
    for line in sys.stdin:
        print(json.dumps(verdict(bytes.fromhex(line.strip()), ranges)), flush=True)


# --- in the fuzzer: read a batch of frames in a child --------------------------------------------

class _Child:
    """One long-lived kio reading process (its schema imports are paid once), started again
    when a frame kills it."""

    def __init__(self, ranges: dict[int, tuple[int, int]]):
        self.ranges_json = json.dumps({str(k): list(v) for k, v in ranges.items()})
        self.proc: subprocess.Popen | None = None

    def _start(self) -> None:
        for attempt in range(IMPORT_ATTEMPTS):
            self.proc = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), self.ranges_json],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True, cwd=_REPO)
            if self.proc.stdout.readline().strip() == "ready":
                return
            self.proc.wait()
            time.sleep(1 + attempt)      # kio did not import (the tree caught mid-edit?)
        raise RuntimeError("the kio child could not start")

    def read(self, payloads: list[bytes]) -> list[Verdict]:
        """Verdicts for a prefix of ``payloads``: all of them, or those before the one that
        killed the child (then the child is gone)."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        proc = self.proc

        def feed():
            try:
                for p in payloads:
                    proc.stdin.write(p.hex() + "\n")
                proc.stdin.flush()
            except (BrokenPipeError, OSError):
                pass                     # it died on a frame: read() sees where
        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        out = []
        while len(out) < len(payloads):
            line = proc.stdout.readline()
            if not line:
                proc.wait()
                self.proc = None
                break
            out.append(Verdict(*json.loads(line)))
        writer.join()
        return out

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(10)
        self.proc = None


_children: dict[str, _Child] = {}
_lock = threading.Lock()


def classify(payloads: list[bytes], ranges: dict[int, tuple[int, int]]) -> list[Verdict]:
    """One Verdict per payload, read by kio in a child process (a frame that kills the child is
    a ``close``: one Kafka's parser refuses, and a new child goes on past it)."""
    key = json.dumps(sorted(ranges.items()))
    with _lock:
        child = _children.get(key)
        if child is None:
            child = _children[key] = _Child(ranges)
        out: list[Verdict] = []
        while len(out) < len(payloads):
            out += child.read(payloads[len(out):])
            if len(out) < len(payloads):     # the child died on the next frame
                head = payloads[len(out)] + b"\0" * 8
                api_key, version, cid = struct.unpack_from(">hhi", head)
                out.append(Verdict(CLOSE, api_key, version, cid,
                                   why="kio's reader killed its process"))
        return out


def warm(ranges: dict[int, tuple[int, int]]) -> None:
    """Start the child and have it load the schema of every served API version (a header with
    nothing behind it: each ends in ``close``), so the first chunk of cases is read at speed;
    run while something else takes time (the seeds being recorded)."""
    classify([struct.pack(">hhi", key, version, 0) + b"\x00\x00\x00"
              for key, (low, high) in sorted(ranges.items()) for version in range(low, high + 1)],
             ranges)


def close_children() -> None:
    with _lock:
        for child in _children.values():
            child.close()
        _children.clear()


class Expectation(NamedTuple):
    """What a Kafka connection must see, frame by frame (see the module doc)."""
    answers: list                 # Verdicts of the frames to be answered, in order, up to a close
    close_allowed: bool           # a frame Kafka closes on (or an acks=0 Produce) is sent
    unjudged: bool                # a frame kio has no schema for: anything goes after it
    #: answers owed for sure: those ahead of the first acks=0 Produce. Kafka closes the
    #: connection there if the Produce fails, else it goes on and answers the rest (None: all)
    owed: int | None = None


def expect(verdicts: list[Verdict]) -> Expectation:
    answers = []
    owed = None
    for v in verdicts:
        if v.kind == "unjudged":
            return Expectation(answers, True, True, owed)
        if v.kind == CLOSE:
            return Expectation(answers, True, False, owed)
        if v.kind == NO_ANSWER:
            owed = len(answers) if owed is None else owed
            continue
        answers.append(v)
    return Expectation(answers, owed is not None, False, owed)


if __name__ == "__main__":
    _child_main(sys.argv[1])
