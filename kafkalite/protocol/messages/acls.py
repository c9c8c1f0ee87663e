"""ACLs: DescribeAcls (29), CreateAcls (30) and DeleteAcls (31), with Kafka's codes for
resource types, pattern types, operations and permissions (``kafkalite.security.acl``).
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kafkalite.errors import NONE
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages.base import Int16, Int8, Request, Response, _message


# ================================================================================================
# DescribeAcls (29), CreateAcls (30), DeleteAcls (31): Kafka's codes for types and operations
# (kafkalite.security.acl)
# ================================================================================================


class AclDescription(NamedTuple):
    principal: str
    host: str
    operation: Int8
    permission_type: Int8


class AclResource(NamedTuple):
    resource_type: Int8
    resource_name: str
    pattern_type: Int8
    acls: list[AclDescription]


class AclCreation(NamedTuple):
    resource_type: Int8
    resource_name: str
    pattern_type: Int8
    principal: str
    host: str
    operation: Int8
    permission_type: Int8


class AclCreationResult(NamedTuple):
    error_code: Int16
    error_message: str | None


class AclFilter(NamedTuple):
    """None for a name, principal or host matches any; ANY (1) for the codes."""
    resource_type: Int8
    resource_name: str | None
    pattern_type: Int8
    principal: str | None
    host: str | None
    operation: Int8
    permission_type: Int8


class DeleteAclsMatchingAcl(NamedTuple):
    error_code: Int16
    error_message: str | None
    resource_type: Int8
    resource_name: str
    pattern_type: Int8
    principal: str
    host: str
    operation: Int8
    permission_type: Int8


class DeleteAclsFilterResult(NamedTuple):
    error_code: Int16
    error_message: str | None
    matching_acls: list[DeleteAclsMatchingAcl]


@_message(ApiKey.DESCRIBE_ACLS)
class DescribeAclsRequest(Request):
    filter: AclFilter

    def error_response(self, error_code, error_message=None):
        return DescribeAclsResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.DESCRIBE_ACLS)
class DescribeAclsResponse(Response):
    error_code: Int16 = NONE
    error_message: str | None = None
    resources: list[AclResource] = field(default_factory=list)


@_message(ApiKey.CREATE_ACLS)
class CreateAclsRequest(Request):
    creations: list[AclCreation] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return CreateAclsResponse(results=[AclCreationResult(error_code, error_message)
                                           for _ in self.creations])


@_message(ApiKey.CREATE_ACLS)
class CreateAclsResponse(Response):
    results: list[AclCreationResult] = field(default_factory=list)


@_message(ApiKey.DELETE_ACLS)
class DeleteAclsRequest(Request):
    filters: list[AclFilter] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        return DeleteAclsResponse(filter_results=[
            DeleteAclsFilterResult(error_code, error_message, []) for _ in self.filters])


@_message(ApiKey.DELETE_ACLS)
class DeleteAclsResponse(Response):
    filter_results: list[DeleteAclsFilterResult] = field(default_factory=list)
