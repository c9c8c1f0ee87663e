"""Kafka's own wire protocol, through kio's schema-generated codecs: ``versions`` (what a broker
advertises), ``codec`` (request and response frames), ``entities`` (responses from plain dicts)."""
