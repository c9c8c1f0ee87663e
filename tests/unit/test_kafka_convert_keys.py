"""Every Kafka converter builds its answers by name: a key that no advertised version of the
response has is a misspelling (``entities.build`` would drop it silently), so it fails here.

The model responses come from the protocol's own samples (one per API,
``test_protocol_messages.RESPONSE_SAMPLES``), converted at every version the table advertises."""

import pytest

from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.entities import unknown_keys
from kafkalite.server.api_table import TABLE
from test_protocol_messages import RESPONSE_SAMPLES

CONVERTED = sorted(key for key, spec in TABLE.items()
                   if spec.kafka is not None and spec.kafka_versions is not None)


def _samples(api_key):
    return [r for r in RESPONSE_SAMPLES if r.API_KEY == api_key]


def test_every_converted_api_has_a_sample():
    assert CONVERTED, "no API has a Kafka converter"
    assert [k for k in CONVERTED if not _samples(k)] == []


@pytest.mark.parametrize("api_key", CONVERTED, ids=lambda k: TABLE[k].name)
def test_response_keys_are_fields_of_some_advertised_version(api_key):
    spec = TABLE[api_key]
    low, high = spec.kafka_versions
    for sample in _samples(api_key):
        unknown_everywhere = None
        for version in range(low, high + 1):
            values = spec.kafka.response(sample, version)
            unknown = unknown_keys(codec.response_class(api_key, version), values)
            unknown_everywhere = unknown if unknown_everywhere is None else (
                unknown_everywhere & unknown)
            # and each version's answer encodes and decodes with kio
            payload = codec.encode_response(api_key, version, 7, values)
            assert codec.decode_response(api_key, version, payload)[0] == 7
        assert not unknown_everywhere, (
            f"{spec.name}: no advertised version has {sorted(unknown_everywhere)}")


def test_a_misspelled_key_is_caught():
    spec = TABLE[18]    # ApiVersions
    sample = _samples(18)[0]
    values = dict(spec.kafka.response(sample, 3), throttle_time_msx=0)
    assert unknown_keys(codec.response_class(18, 3), values) == {"throttle_time_msx"}
    values = spec.kafka.response(sample, 3)
    values["api_keys"] = [dict(values["api_keys"][0], max_verson=1)]
    assert unknown_keys(codec.response_class(18, 3), values) == {"api_keys[].max_verson"}
