"""DescribeAcls, CreateAcls and DeleteAcls between Kafka's protocol and the model. Version 0 has
no pattern types: its filters and creations are LITERAL."""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter

__all__ = ["DESCRIBE_ACLS", "CREATE_ACLS", "DELETE_ACLS"]

_LITERAL = 3      # PatternType.LITERAL


def _filter(f, pattern_field: str) -> m.AclFilter:
    return m.AclFilter(int(f.resource_type_filter), f.resource_name_filter,
                       int(getattr(f, pattern_field, _LITERAL)), f.principal_filter,
                       f.host_filter, int(f.operation), int(f.permission_type))


def _describe_response(r: m.DescribeAclsResponse, version: int) -> dict:
    return {"throttle_time": 0, "error_code": r.error_code, "error_message": r.error_message,
            "resources": [{"resource_type": res.resource_type,
                           "resource_name": res.resource_name,
                           "pattern_type": res.pattern_type,
                           "acls": [{"principal": a.principal, "host": a.host,
                                     "operation": a.operation,
                                     "permission_type": a.permission_type} for a in res.acls]}
                          for res in r.resources]}


DESCRIBE_ACLS = Converter(
    lambda entity, version: m.DescribeAclsRequest(filter=_filter(entity, "pattern_type_filter")),
    _describe_response)

CREATE_ACLS = Converter(
    lambda entity, version: m.CreateAclsRequest(creations=[
        m.AclCreation(int(c.resource_type), c.resource_name,
                      int(getattr(c, "resource_pattern_type", _LITERAL)), c.principal, c.host,
                      int(c.operation), int(c.permission_type)) for c in entity.creations]),
    lambda r, version: {"throttle_time": 0, "results": [
        {"error_code": x.error_code, "error_message": x.error_message} for x in r.results]})


def _delete_response(r: m.DeleteAclsResponse, version: int) -> dict:
    return {"throttle_time": 0, "filter_results": [{
        "error_code": f.error_code, "error_message": f.error_message, "matching_acls": [{
            "error_code": a.error_code, "error_message": a.error_message,
            "resource_type": a.resource_type, "resource_name": a.resource_name,
            "pattern_type": a.pattern_type, "principal": a.principal, "host": a.host,
            "operation": a.operation, "permission_type": a.permission_type}
            for a in f.matching_acls]} for f in r.filter_results]}


DELETE_ACLS = Converter(
    lambda entity, version: m.DeleteAclsRequest(filters=[
        _filter(f, "pattern_type_filter") for f in entity.filters]),
    _delete_response)
