"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs between Kafka's protocol and the
model.

Per version (kio's schemas, Kafka 2.8's ranges): DescribeConfigs v1+ may ask for synonyms and v3+
for documentation (each entry then carries its type and documentation); v0, whose entries say
``is_default`` instead of a source, is below kio's range and not served.
"""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter

__all__ = ["DESCRIBE_CONFIGS", "ALTER_CONFIGS", "INCREMENTAL_ALTER_CONFIGS"]

# --- DescribeConfigs (32) ------------------------------------------------------------------------

def _describe_configs_request(entity, version: int) -> m.DescribeConfigsRequest:
    return m.DescribeConfigsRequest(
        resources=[m.DescribeConfigsResource(
            r.resource_type, r.resource_name,
            None if r.configuration_keys is None else list(r.configuration_keys))
            for r in entity.resources],
        include_synonyms=bool(getattr(entity, "include_synonyms", False)),
        include_documentation=bool(getattr(entity, "include_documentation", False)))


def _describe_configs_response(r: m.DescribeConfigsResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "results": [{
        "error_code": res.error_code, "error_message": res.error_message,
        "resource_type": res.resource_type, "resource_name": res.resource_name,
        "configs": [{
            "name": c.name, "value": c.value, "read_only": c.read_only,
            "config_source": c.config_source, "is_sensitive": c.is_sensitive,
            "synonyms": [{"name": s.name, "value": s.value, "source": s.source}
                         for s in c.synonyms],
            "config_type": c.config_type, "documentation": c.documentation}
            for c in res.configs]} for res in r.results]}


DESCRIBE_CONFIGS = Converter(_describe_configs_request, _describe_configs_response)


# --- AlterConfigs (33) and IncrementalAlterConfigs (44) -------------------------------------------

def _alter_configs_request(entity, version: int) -> m.AlterConfigsRequest:
    return m.AlterConfigsRequest(
        resources=[m.AlterConfigsResource(r.resource_type, r.resource_name,
                                          [m.AlterableConfig(c.name, c.value) for c in r.configs])
                   for r in entity.resources],
        validate_only=bool(entity.validate_only))


def _incremental_alter_configs_request(entity, version: int) -> m.IncrementalAlterConfigsRequest:
    return m.IncrementalAlterConfigsRequest(
        resources=[m.IncrementalAlterConfigsResource(
            r.resource_type, r.resource_name,
            [m.AlterableConfigOp(c.name, c.config_operation, c.value) for c in r.configs])
            for r in entity.resources],
        validate_only=bool(entity.validate_only))


def _alter_configs_response(r, version: int) -> dict:
    """Both APIs answer alike (``AlterConfigsResourceResponse`` per resource)."""
    return {"throttle_time": r.throttle_time_ms, "responses": [
        {"error_code": res.error_code, "error_message": res.error_message,
         "resource_type": res.resource_type, "resource_name": res.resource_name}
        for res in r.responses]}


ALTER_CONFIGS = Converter(_alter_configs_request, _alter_configs_response)
INCREMENTAL_ALTER_CONFIGS = Converter(_incremental_alter_configs_request,
                                      _alter_configs_response)
