"""Kafka 2.8.2's tools that need an API kafkalite does not serve yet.

Each test is the real test: it runs against the Apache Kafka oracle first (which must pass it)
and then against kafkalite, asserting what Kafka gives. They are strict xfails naming the API, so
the day kafkalite serves it the test passes and strictness turns that into a failure asking for
the marker to go. kafka-features is here too: in Kafka 2.8 no feature is defined, so the tool
never sends UpdateFeatures and describes through ApiVersions, which kafkalite serves: it passes.
"""

from __future__ import annotations

import pytest
from kafka_tool_checks import KAFKA, KAFKALITE, tool

pytestmark = [pytest.mark.integration]

ORACLE_FIRST = (KAFKA, KAFKALITE)


def _issue_23(api: str) -> str:
    return f"needs {api}: issue 23 (the rest of Kafka 2.8's API set)"


def test_features_describe_as_kafka(kafka_systems):
    """Kafka 2.8 defines no features: --describe (ApiVersions' feature fields) and
    --upgrade-all --dry-run print nothing and succeed, on both systems alike."""
    outputs = {}
    for name in ORACLE_FIRST:
        bs = kafka_systems[name].bootstrap_servers
        outputs[name] = [tool("kafka-features", "--bootstrap-server", bs, *args).stdout
                         for args in (["--describe"], ["--upgrade-all", "--dry-run"])]
    assert outputs[KAFKALITE] == outputs[KAFKA] == ["", ""]
