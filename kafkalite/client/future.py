"""Futures for produced records: one shared result per batch, one tiny handle per record.

``send()`` must be cheap, so a record's future is a 5-slot object pointing at its batch's
``BatchResult`` plus its index in the batch; the batch result is resolved once (by the producer's
sender thread) with the batch's base offset, and every record's offset is ``base_offset + index``.
``RecordMetadata`` is only built when somebody asks (``get``, ``value`` or a callback).

Callbacks run on the thread that resolves the batch (the producer's sender thread), or at once on
the calling thread if the future is already done, as in kafka-python. An exception escaping a
callback is logged and otherwise ignored.
"""

from __future__ import annotations

import logging
import threading

from kafkalite.client.structs import RecordMetadata
from kafkalite.errors import KafkaTimeoutError

log = logging.getLogger(__name__)

# guards callback registration and waiting against a concurrent resolve (only taken by a
# callback or a wait, never by send(): a batch's result is two attribute stores until somebody
# waits on it)
_CALLBACK_LOCK = threading.Lock()

__all__ = ["BatchResult", "FutureRecordMetadata"]


class BatchResult:
    """The outcome of one batch: base offset and times, or the error that failed it."""

    __slots__ = ("topic", "partition", "base_offset", "log_append_time", "log_start_offset",
                 "error", "done", "_event", "_callbacks")

    def __init__(self, topic: str, partition: int):
        self.topic = topic
        self.partition = partition
        self.base_offset = -1
        self.log_append_time = -1
        self.log_start_offset = -1
        self.error: BaseException | None = None
        self.done = False
        self._event: threading.Event | None = None   # made by the first wait()
        self._callbacks: list | None = None

    def resolve(self, base_offset: int, log_append_time: int = -1,
                log_start_offset: int = -1) -> None:
        if self.done:
            return
        self.base_offset = base_offset
        self.log_append_time = log_append_time
        self.log_start_offset = log_start_offset
        self._finish()

    def fail(self, error: BaseException) -> None:
        if self.done:
            return
        self.error = error
        self._finish()

    def _finish(self) -> None:
        with _CALLBACK_LOCK:
            self.done = True
            callbacks, self._callbacks = self._callbacks, None
            event = self._event
        if event is not None:
            event.set()
        if callbacks:
            for future, fn, args, kwargs, on_success in callbacks:
                future._call(fn, args, kwargs, on_success)

    def wait(self, timeout: float | None = None) -> bool:
        if self.done:
            return True
        with _CALLBACK_LOCK:
            if self.done:
                return True
            event = self._event
            if event is None:
                event = self._event = threading.Event()
        return event.wait(timeout)

    def add(self, future, fn, args, kwargs, on_success: bool) -> bool:
        """Register a callback; False if already done (the caller runs it itself)."""
        with _CALLBACK_LOCK:
            if self.done:
                return False
            entry = (future, fn, args, kwargs, on_success)
            if self._callbacks is None:
                self._callbacks = [entry]
            else:
                self._callbacks.append(entry)
            return True


class FutureRecordMetadata:
    """The future ``Producer.send`` returns; ``get(timeout)`` gives the RecordMetadata."""

    __slots__ = ("_result", "_index", "_timestamp", "_key_size", "_value_size")

    def __init__(self, result: BatchResult, index: int, timestamp: int, key_size: int,
                 value_size: int):
        self._result = result
        self._index = index
        self._timestamp = timestamp
        self._key_size = key_size
        self._value_size = value_size

    def __repr__(self) -> str:
        r = self._result
        state = ("pending" if not r.done else
                 f"failed: {r.error!r}" if r.error is not None else f"offset {self._offset()}")
        return f"<FutureRecordMetadata {r.topic}-{r.partition} {state}>"

    def _offset(self) -> int:
        base = self._result.base_offset
        return base + self._index if base >= 0 else -1

    def _metadata(self) -> RecordMetadata:
        r = self._result
        ts = r.log_append_time if r.log_append_time >= 0 else self._timestamp
        return RecordMetadata(r.topic, r.partition, self._offset(), ts, r.log_start_offset,
                              self._key_size, self._value_size)

    # --- kafka-python's Future API ----------------------------------------------------------
    @property
    def is_done(self) -> bool:
        return self._result.done

    def succeeded(self) -> bool:
        return self._result.done and self._result.error is None

    def failed(self) -> bool:
        return self._result.done and self._result.error is not None

    @property
    def exception(self) -> BaseException | None:
        return self._result.error

    @property
    def value(self) -> RecordMetadata | None:
        if not self._result.done or self._result.error is not None:
            return None
        return self._metadata()

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """Block until the record is acknowledged; raise its error, or KafkaTimeoutError."""
        r = self._result
        if not r.done and not r.wait(timeout):
            raise KafkaTimeoutError(
                f"timed out after {timeout} s waiting for the acknowledgement of a record "
                f"sent to {r.topic}-{r.partition}")
        if r.error is not None:
            raise r.error
        return self._metadata()

    def add_callback(self, fn, *args, **kwargs) -> FutureRecordMetadata:
        """``fn(record_metadata, *args, **kwargs)`` once the record is acknowledged."""
        if not self._result.add(self, fn, args, kwargs, True):
            self._call(fn, args, kwargs, True)
        return self

    def add_errback(self, fn, *args, **kwargs) -> FutureRecordMetadata:
        """``fn(exception, *args, **kwargs)`` if sending the record fails."""
        if not self._result.add(self, fn, args, kwargs, False):
            self._call(fn, args, kwargs, False)
        return self

    def add_both(self, fn, *args, **kwargs) -> FutureRecordMetadata:
        self.add_callback(fn, *args, **kwargs)
        return self.add_errback(fn, *args, **kwargs)

    def _call(self, fn, args, kwargs, on_success: bool) -> None:
        r = self._result
        if (r.error is None) != on_success:
            return
        try:
            fn(self._metadata() if on_success else r.error, *args, **kwargs)
        except Exception:  # noqa: BLE001 - a user's callback must not break the producer
            log.exception("producer %s %r raised", "callback" if on_success else "errback", fn)

