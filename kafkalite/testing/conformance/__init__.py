"""A differential conformance suite: one client, two systems, the answers compared.

Each scenario (``catalogue``) asks a question through confluent-kafka or a raw Kafka-protocol
request; the runner asks it of Apache Kafka 2.8.2 and of kafkalite, normalises both answers
(``normalise``) and judges them against the allowlist of known differences (``allowlist``);
``report`` writes ``docs/conformance.md``. ``tests/conformance`` runs it in the test session,
``bench/conformance.py`` on clusters of its own.
"""
