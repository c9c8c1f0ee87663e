"""InitProducerId (with a transactional id), AddPartitionsToTxn, AddOffsetsToTxn and EndTxn
through the API table and the real connection pipeline, for both wire protocols
(test_group_handlers' broker and fake authorizer, which refuses the transactional id
``tx-secret``, the group ``secret-group`` and the topic ``secret``; a stand-in transaction
coordinator records the calls): Kafka 2.8's ACL checks and their order, AddPartitionsToTxn's
all-or-nothing answer with OPERATION_NOT_ATTEMPTED, internal topics refused there, and
PRODUCER_FENCED as old clients see it."""

from types import SimpleNamespace

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.txn.coordinator import InitProducerIdResult

from test_group_handlers import (  # noqa: F401 - the fixtures, found by name
    TOPIC_DENIED, UNKNOWN_PARTITION, StandIn, _metadata_cache, authorizer, kafka, native,
)

import pytest

TXN_DENIED = errors.TransactionalIdAuthorizationFailedError.code
GROUP_DENIED = errors.GroupAuthorizationFailedError.code
NOT_ATTEMPTED = errors.OperationNotAttemptedError.code
FENCED = errors.ProducerFencedError.code
OLD_FENCED = errors.InvalidProducerEpochError.code


@pytest.fixture
def txn():
    return StandIn()


@pytest.fixture
def broker(txn, authorizer):
    return SimpleNamespace(
        txn_coordinator=txn, metadata_cache=_metadata_cache(),
        offsets_store=SimpleNamespace(partition_for=lambda group: 7),
        security=SimpleNamespace(authorizer=authorizer))


def _add_values(txn_id="tx", topics=(("t", [0, 1]),)):
    return {"v3_and_below_transactional_id": txn_id, "v3_and_below_producer_id": 9000,
            "v3_and_below_producer_epoch": 2,
            "v3_and_below_topics": [{"name": n, "partitions": p} for n, p in topics]}


def _add_request(txn_id="tx", topics=(("t", [0, 1]),)):
    return m.AddPartitionsToTxnRequest(
        transactional_id=txn_id, producer_id=9000, producer_epoch=2,
        topics=[m.AddPartitionsToTxnTopic(n, list(p)) for n, p in topics])


def _add_codes(answer, kafka_names=True):
    if kafka_names:
        return {(t.name, p.partition_index): p.partition_error_code
                for t in answer.results_by_topic_v3_and_below for p in t.results_by_partition}
    return {(t.name, p.partition_index): p.error_code for t in answer.results for p in t.results}


# --- InitProducerId ---------------------------------------------------------------------------

def _init_values(txn_id="tx", producer_id=-1, producer_epoch=-1):
    return {"transactional_id": txn_id, "transaction_timeout": 60000,
            "producer_id": producer_id, "producer_epoch": producer_epoch}


def test_init_producer_id_goes_to_the_coordinator(broker, txn):
    txn.answers["init_producer_id"] = InitProducerIdResult(0, 4000, 3)
    answer = kafka(broker, ApiKey.INIT_PRODUCER_ID, 4, _init_values(producer_id=4000,
                                                                   producer_epoch=2))
    assert (answer.error_code, answer.producer_id, answer.producer_epoch) == (0, 4000, 3)
    response = native(broker, m.InitProducerIdRequest(transactional_id="tx"))
    assert (response.error_code, response.producer_id, response.producer_epoch) == (0, 4000, 3)
    assert txn.calls == [("init_producer_id", ("tx", 60000, (4000, 2))),
                         ("init_producer_id", ("tx", 60000, None))]


def test_init_producer_id_refusals(broker, txn):
    answer = kafka(broker, ApiKey.INIT_PRODUCER_ID, 4, _init_values("tx-secret"))
    assert (answer.error_code, answer.producer_id) == (TXN_DENIED, -1)
    answer = kafka(broker, ApiKey.INIT_PRODUCER_ID, 4, _init_values(producer_id=4000))
    assert answer.error_code == errors.InvalidRequestError.code
    assert txn.calls == []
    # PRODUCER_FENCED is new in v4: v3 clients are told INVALID_PRODUCER_EPOCH
    txn.answers["init_producer_id"] = InitProducerIdResult(FENCED)
    assert kafka(broker, ApiKey.INIT_PRODUCER_ID, 3, _init_values()).error_code == OLD_FENCED
    assert kafka(broker, ApiKey.INIT_PRODUCER_ID, 4, _init_values()).error_code == FENCED


# --- AddPartitionsToTxn -----------------------------------------------------------------------

def test_add_partitions_served(broker, txn):
    txn.answers["add_partitions"] = 0
    assert _add_codes(kafka(broker, ApiKey.ADD_PARTITIONS_TO_TXN, 3, _add_values())) == {
        ("t", 0): 0, ("t", 1): 0}
    assert _add_codes(native(broker, _add_request()), kafka_names=False) == {
        ("t", 0): 0, ("t", 1): 0}
    assert txn.calls[0] == ("add_partitions", ("tx", 9000, 2, [("t", 0), ("t", 1)]))


def test_add_partitions_refused_or_unknown_adds_none(broker, txn):
    topics = (("t", [0, 5]), ("secret", [0]), ("__consumer_offsets", [0]))
    expected = {("t", 0): NOT_ATTEMPTED, ("t", 5): UNKNOWN_PARTITION,
                ("secret", 0): TOPIC_DENIED, ("__consumer_offsets", 0): TOPIC_DENIED}
    assert _add_codes(kafka(broker, ApiKey.ADD_PARTITIONS_TO_TXN, 3,
                            _add_values(topics=topics))) == expected
    assert _add_codes(native(broker, _add_request(topics=topics)), False) == expected
    assert txn.calls == []


def test_add_partitions_with_a_refused_transactional_id(broker, txn):
    answer = kafka(broker, ApiKey.ADD_PARTITIONS_TO_TXN, 3, _add_values("tx-secret"))
    assert set(_add_codes(answer).values()) == {TXN_DENIED}
    assert txn.calls == []


def test_add_partitions_fenced_as_each_version_says_it(broker, txn):
    txn.answers["add_partitions"] = FENCED
    v1 = kafka(broker, ApiKey.ADD_PARTITIONS_TO_TXN, 1, _add_values())
    v2 = kafka(broker, ApiKey.ADD_PARTITIONS_TO_TXN, 2, _add_values())
    assert set(_add_codes(v1).values()) == {OLD_FENCED}
    assert set(_add_codes(v2).values()) == {FENCED}


# --- AddOffsetsToTxn, EndTxn ------------------------------------------------------------------

def _offsets_values(txn_id="tx", group="g"):
    return {"transactional_id": txn_id, "producer_id": 9000, "producer_epoch": 2,
            "group_id": group}


def test_add_offsets_adds_the_groups_offsets_partition(broker, txn):
    txn.answers["add_partitions"] = 0
    assert kafka(broker, ApiKey.ADD_OFFSETS_TO_TXN, 3, _offsets_values()).error_code == 0
    assert native(broker, m.AddOffsetsToTxnRequest(
        transactional_id="tx", producer_id=9000, producer_epoch=2, group_id="g")).error_code == 0
    assert txn.calls == [("add_partitions", ("tx", 9000, 2, [("__consumer_offsets", 7)]))] * 2


def test_add_offsets_checks_the_transactional_id_then_the_group(broker, txn):
    assert kafka(broker, ApiKey.ADD_OFFSETS_TO_TXN, 3,
                 _offsets_values("tx-secret", "secret-group")).error_code == TXN_DENIED
    assert kafka(broker, ApiKey.ADD_OFFSETS_TO_TXN, 3,
                 _offsets_values(group="secret-group")).error_code == GROUP_DENIED
    assert txn.calls == []


def test_end_txn(broker, txn):
    txn.answers["end_txn"] = 0
    values = {"transactional_id": "tx", "producer_id": 9000, "producer_epoch": 2,
              "committed": True}
    assert kafka(broker, ApiKey.END_TXN, 3, values).error_code == 0
    assert native(broker, m.EndTxnRequest(transactional_id="tx", producer_id=9000,
                                          producer_epoch=2, committed=False)).error_code == 0
    assert txn.calls == [("end_txn", ("tx", 9000, 2, True)), ("end_txn", ("tx", 9000, 2, False))]
    assert kafka(broker, ApiKey.END_TXN, 3,
                 dict(values, transactional_id="tx-secret")).error_code == TXN_DENIED
    assert len(txn.calls) == 2
    txn.answers["end_txn"] = FENCED
    assert kafka(broker, ApiKey.END_TXN, 1, values).error_code == OLD_FENCED
    assert kafka(broker, ApiKey.END_TXN, 2, values).error_code == FENCED


def test_without_a_transaction_coordinator_not_available(broker):
    broker.txn_coordinator = None
    not_available = errors.CoordinatorNotAvailableError.code
    assert kafka(broker, ApiKey.END_TXN, 3, {
        "transactional_id": "tx", "producer_id": 1, "producer_epoch": 0,
        "committed": True}).error_code == not_available
    assert kafka(broker, ApiKey.INIT_PRODUCER_ID, 4, _init_values()).error_code == not_available
