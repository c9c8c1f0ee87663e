import time

import pytest

from kafkalite import errors
from kafkalite.record import build_batch
from kafkalite.server.producer_state import ProducerStateTable, first_producer_id

from test_server_replica_manager import Harness, _resolved


def test_new_producer_then_in_order_batches():
    table = ProducerStateTable()
    assert table.check(7, 0, 0, 3) is None
    table.update(7, 0, 0, 3, 100, 102)
    assert table.check(7, 0, 3, 2) is None
    table.update(7, 0, 3, 2, 103, 104)
    cached = table.check(7, 0, 0, 3)                    # the first batch, retried
    assert (cached.first_offset, cached.last_offset) == (100, 102)


@pytest.mark.parametrize("epoch,sequence,error", [
    (0, 9, errors.OutOfOrderSequenceNumberError),       # a gap
    (1, 4, errors.OutOfOrderSequenceNumberError),       # a new epoch must start at 0
    (-1, 3, errors.InvalidProducerEpochError),          # fenced by a newer epoch
])
def test_rejections(epoch, sequence, error):
    table = ProducerStateTable()
    table.update(7, 0, 0, 3, 0, 2)
    with pytest.raises(error):
        table.check(7, epoch, sequence, 1)


def test_only_five_batches_are_remembered_and_truncation_forgets():
    table = ProducerStateTable()
    for i in range(7):
        table.update(1, 0, i, 1, i, i)
    assert table.check(1, 0, 6, 1) is not None
    assert len(table.producers[1].batches) == 5
    table.truncate(5)
    assert table.producers[1].last_sequence == 4


def _idempotent_batch(pid, epoch, sequence, n=3):
    now = int(time.time() * 1000)
    return build_batch([(now, None, b"v%d" % i, None) for i in range(n)], producer_id=pid,
                       producer_epoch=epoch, base_sequence=sequence)


def test_first_producer_id_reads_the_header():
    assert first_producer_id(_idempotent_batch(42, 0, 0)) == 42
    assert first_producer_id(build_batch([(0, None, b"x", None)])) == -1


def test_broker_answers_a_retried_batch_with_its_original_offsets(tmp_path):
    h = Harness(tmp_path)
    h.lead([1], [1])

    def send(batch):
        response = _resolved(h.manager.append_records(30000, 1, False, {("t", 0): batch}))
        return response[("t", 0)]

    first = _idempotent_batch(5, 0, 0)
    assert send(first).base_offset == 0
    assert send(_idempotent_batch(5, 0, 3)).base_offset == 3
    retried = send(first)
    assert (retried.error_code, retried.base_offset) == (0, 0)
    assert h.manager.partitions[("t", 0)].log_end_offset == 6       # nothing written twice
    gap = send(_idempotent_batch(5, 0, 9))
    assert gap.error_code == errors.OutOfOrderSequenceNumberError.code
    # a replica rebuilt from the log knows the same producers
    from kafkalite.server.partition import epoch_starts_from_log
    from kafkalite.server.producer_state import ProducerStateTable as Table
    rebuilt = Table()
    epoch_starts_from_log(h.manager.partitions[("t", 0)].log, producer_states=rebuilt)
    assert rebuilt.check(5, 0, 3, 3).first_offset == 3
