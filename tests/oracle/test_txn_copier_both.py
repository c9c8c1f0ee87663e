"""The exactly-once copier (``kafkalite.testing.txn_copier``) without faults, on both systems.

The copier is a process of its own on confluent-kafka (a read_committed consumer in a group, a
transactional producer, ``send_offsets_to_transaction`` per batch of records); kcat, reading the
output with read_committed, judges: every input record copied exactly once, to its own partition.
The group's committed offsets reach the input's end (the copier's own exit condition, under
require_stable). The same run on Apache Kafka 2.8 shows the copier and the judge are right; on
kafkalite it is the transactions' end-to-end path (issue 22), the base of the fault runs in
``tests/system/test_txn_copier_faults.py``.
"""

from __future__ import annotations

import uuid

import pytest

from kafkalite.testing.oracle_fixtures import SYSTEMS
from kafkalite.testing.txn_copier import (CopierProcess, exactly_once_problems, prepare_topics,
                                          read_committed_with_kcat)

pytestmark = [pytest.mark.integration]

RECORDS = 6000
BATCH = 500


@pytest.mark.parametrize("system", SYSTEMS, indirect=True)
def test_copier_copies_every_record_exactly_once(system):
    bootstrap = system.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    source, sink = f"copy-in-{run}", f"copy-out-{run}"
    ends = prepare_topics(bootstrap, source, sink, RECORDS)
    copier = CopierProcess(bootstrap, source, sink, f"copy-group-{run}", f"copy-txn-{run}",
                           "--batch", str(BATCH))
    try:
        code = copier.wait_exit(300)
    finally:
        copier.close()
    assert code == 0, copier.describe()
    assert copier.seen("done") is not None, copier.describe()
    # nothing went wrong on the way: one commit per batch and no abort
    assert copier.seen("aborted") is None, copier.describe()
    assert copier.committed() >= RECORDS // BATCH, copier.describe()

    records = read_committed_with_kcat(bootstrap, sink)
    assert exactly_once_problems(records, ends) == []
    assert len(records) == RECORDS
