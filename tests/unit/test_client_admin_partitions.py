"""AdminClient.create_partitions checks its arguments before anything goes on the wire."""

import pytest

from kafkalite import AdminClient, NewPartitions
from kafkalite.errors import (InvalidPartitionsError, InvalidReplicaAssignmentError,
                              InvalidTopicError)


@pytest.mark.parametrize("request_,error", [
    ({"t": NewPartitions(0)}, InvalidPartitionsError),
    ({"t": -3}, InvalidPartitionsError),
    ({"t": NewPartitions("4")}, InvalidPartitionsError),
    ({"t": NewPartitions(3, [["a"]])}, InvalidReplicaAssignmentError),
    ({"bad name": 3}, InvalidTopicError),
])
def test_bad_arguments_are_refused_locally(request_, error):
    with AdminClient("127.0.0.1:1", request_timeout_ms=100) as admin:
        with pytest.raises(error):
            admin.create_partitions(request_)


def test_nothing_to_do():
    with AdminClient("127.0.0.1:1", request_timeout_ms=100) as admin:
        assert admin.create_partitions({}) == {}
