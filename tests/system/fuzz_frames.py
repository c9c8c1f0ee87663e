"""What a fuzz case is and how one goes over the wire, for both protocols a broker port speaks
(shared by kafka_fuzz_tools, native_fuzz_cases and fuzz_runner; no test functions here).

A case is bytes written on a fresh connection. What the broker makes of them is decided the way
the broker decides it (kafkalite/server/network.py; docs/architecture.md, 3. The request
pipeline): the stream is cut into Int32-length frames; a length that is negative or above
``socket.request.max.bytes`` ends the connection; the first frame's first byte picks the
protocol (0x00 Kafka, a msgpack array header native, anything else: closed).
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass

#: the brokers' socket.request.max.bytes (Kafka's default): a longer frame closes the connection
MAX_FRAME_BYTES = 104_857_600
KAFKA, NATIVE = "kafka", "native"


@dataclass
class Case:
    protocol: str                     # the generator that made it: "kafka" or "native"
    kind: str                         # the mutation, e.g. "flip", "length-huge", "msgpack-int"
    data: bytes                       # exactly the bytes written to the socket
    broker_id: int | None = None      # the broker it is meant for (None: round-robin)
    seed: str = ""                    # the seed it was made from


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def complete_frames(data: bytes) -> list[bytes]:
    """The frame payloads the broker reads whole from ``data``, in order (it stops at an
    impossible length, which closes the connection, or at a frame that never completes)."""
    frames, pos = [], 0
    while len(data) - pos >= 4:
        (length,) = struct.unpack_from(">i", data, pos)
        if length < 0 or length > MAX_FRAME_BYTES or pos + 4 + length > len(data):
            break
        frames.append(data[pos + 4:pos + 4 + length])
        pos += 4 + length
    return frames


def bad_framing(data: bytes) -> bool:
    """Whether ``data`` holds a length prefix the broker cannot read past (negative or above
    ``socket.request.max.bytes``): malformed at the framing level, so a close is right, and
    may come before the frames ahead of it are answered."""
    pos = 0
    while len(data) - pos >= 4:
        (length,) = struct.unpack_from(">i", data, pos)
        if length < 0 or length > MAX_FRAME_BYTES:
            return True
        pos += 4 + length
    return False


def sniff(first_payload: bytes) -> str | None:
    """The protocol a connection speaks, from its first frame (kafkalite/server/network.py)."""
    if not first_payload:
        return None
    byte = first_payload[0]
    if byte == 0x00:
        return KAFKA
    if 0x90 <= byte <= 0x9F or byte in (0xDC, 0xDD):
        return NATIVE
    return None


@dataclass
class Exchange:
    result: str                       # "answered" | "closed" | "silent"
    frames: list                      # the response frame payloads, in order
    leftover: int                     # bytes of an incomplete response frame at the end


def exchange(port: int, data: bytes, expected: int, wait_s: float = 0.5) -> Exchange:
    """Write ``data`` on a fresh connection; read until the broker closes, has sent ``expected``
    frames, or stays silent for ``wait_s`` (the wait restarts with every frame)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    buf = bytearray()
    frames: list[bytes] = []
    result = "silent"
    try:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            return Exchange("closed", [], 0)
        deadline = time.monotonic() + wait_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            sock.settimeout(remaining)
            try:
                chunk = sock.recv(1 << 16)
            except socket.timeout:
                break
            except (ConnectionResetError, ConnectionAbortedError):
                result = "closed"
                break
            if not chunk:
                result = "closed"
                break
            buf += chunk
            while len(buf) >= 4:
                (n,) = struct.unpack_from(">i", buf)
                if n < 0 or len(buf) < 4 + n:
                    break
                frames.append(bytes(buf[4:4 + n]))
                del buf[:4 + n]
            if expected and len(frames) >= expected:
                result = "answered"
                break
            if frames:
                deadline = max(deadline, time.monotonic() + wait_s)
    finally:
        sock.close()
    if frames and result != "closed":
        result = "answered"
    return Exchange(result, frames, len(buf))
