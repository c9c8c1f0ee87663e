"""Metadata on a broker that has not heard from the controller yet (issue 24, bug 3).

Right after start-up a broker's metadata cache holds no broker and no controller. Answered at
once, that empty Metadata left librdkafka's AdminClient waiting for a controller it did not ask
about again: its CreateTopics never left the client. The answer now waits for the controller's
first UpdateMetadata (the broker's metadata waits), for a bounded time, and says so in the log
when it had to answer without one. Time is a task.Clock.
"""

import logging
from types import SimpleNamespace

from twisted.internet import defer, task

from kafkalite.protocol import messages as m
from kafkalite.server.metadata_apis import handle_metadata
from kafkalite.server.metadata_cache import MetadataCache
from kafkalite.server.metadata_waits import MetadataWaits
from kafkalite.server.request_authz import RequestAuthz

STARTUP_METADATA_WAIT_MS = 10000      # metadata_apis: the longest a Metadata answer waits


def starting_broker(clock):
    return SimpleNamespace(metadata_cache=MetadataCache(1), metadata_waits=MetadataWaits(clock),
                           config=SimpleNamespace(auto_create_topics_enable=False),
                           cluster_id="c")


def ctx():
    return SimpleNamespace(authz=RequestAuthz(), listener="PLAINTEXT", client_id="adminclient-1")


def first_update(broker):
    broker.metadata_cache.update(m.UpdateMetadataRequest(
        controller_id=1, controller_epoch=1, broker_epoch=5, partition_states=[],
        live_brokers=[m.UpdateMetadataBroker(1, "127.0.0.1", 9092, None,
                                             ["PLAINTEXT://127.0.0.1:9092"])]))
    broker.metadata_waits.check()


def answer_of(result):
    got = []
    defer.maybeDeferred(lambda: result).addCallback(got.append)
    return got


def test_metadata_waits_for_the_controllers_first_update():
    clock = task.Clock()
    broker = starting_broker(clock)
    got = answer_of(handle_metadata(broker, ctx(), m.MetadataRequest(topics=None)))
    assert got == []                       # not answered empty
    clock.advance(1)
    first_update(broker)
    assert len(got) == 1
    assert got[0].controller_id == 1 and [b.node_id for b in got[0].brokers] == [1]


def test_metadata_is_answered_by_the_bound_and_the_broker_says_why(caplog):
    caplog.set_level(logging.WARNING, logger="kafkalite.server.metadata_apis")
    clock = task.Clock()
    broker = starting_broker(clock)
    got = answer_of(handle_metadata(broker, ctx(), m.MetadataRequest(topics=None)))
    clock.advance(STARTUP_METADATA_WAIT_MS / 1000)
    assert len(got) == 1 and got[0].controller_id == -1 and got[0].brokers == []
    assert "no UpdateMetadata from the controller" in caplog.text


def test_after_the_first_update_metadata_is_answered_at_once():
    clock = task.Clock()
    broker = starting_broker(clock)
    first_update(broker)
    got = answer_of(handle_metadata(broker, ctx(), m.MetadataRequest(topics=None)))
    assert len(got) == 1 and got[0].controller_id == 1
