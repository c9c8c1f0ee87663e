import pytest

from kafkalite import errors


def test_codes_are_unique_and_round_trip():
    for cls in errors.all_errors():
        exc = errors.for_code(cls.code, "detail")
        assert type(exc) is cls
        assert errors.code_of(exc) == cls.code
        assert "detail" in str(exc) and cls.name in str(exc)


@pytest.mark.parametrize("code,name,retriable", [
    (3, "UNKNOWN_TOPIC_OR_PARTITION", True), (6, "NOT_LEADER_OR_FOLLOWER", True),
    (10, "MESSAGE_TOO_LARGE", False), (11, "STALE_CONTROLLER_EPOCH", False),
    (19, "NOT_ENOUGH_REPLICAS", True), (2, "CORRUPT_MESSAGE", True),
])
def test_kafka_numbers(code, name, retriable):
    exc = errors.for_code(code)
    assert exc.name == name and exc.retriable is retriable


def test_unknown_code_becomes_unknown_server_error():
    exc = errors.for_code(9999, "what")
    assert isinstance(exc, errors.UnknownServerError) and "9999" in str(exc)


def test_unexpected_exception_maps_to_unknown_server_error():
    assert errors.code_of(ValueError("boom")) == -1
