"""The broker process's garbage-collector policy: keep CPython's full (generation 2) collections
off the request path's tail latency.

Why: a broker process holds ~110,000 gc-tracked objects before serving anything (the import state
of kio's schemas, Twisted, kazoo and kafkalite: functions, tuples, dicts, types). Every
generation-2 collection walks them all, 45-70 ms of CPU on the bench machine with the reactor
thread blocked meanwhile, and such a collection comes a few times a minute under load and after
topic creations (measured with ``gc.callbacks``: it was the stall behind the 3-broker delivery
latency p99 of ~76 ms, bench/vs_kafka.py). Those objects live as long as the process, so once the
broker is up they are moved out of the collector's sight (``gc.freeze``, as CPython's docs
advise for long-lived servers), after one collection so that start-up garbage is not frozen with
them. What the broker builds later (partitions, logs, connections) stays collectable.

``freeze_startup_objects`` is called once, by ``kafkalite broker`` when the broker is ready.
It takes the ``gc`` module as an argument so unit tests pass a fake.
"""

from __future__ import annotations

import gc as _gc
import logging

log = logging.getLogger(__name__)


def freeze_startup_objects(gc=_gc) -> int:
    """Collect once, then freeze every object that survived (the start-up state): later
    collections no longer walk it. Returns the number of objects frozen."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.info("gc: %d start-up objects frozen out of the collector's walks", frozen)
    return frozen
