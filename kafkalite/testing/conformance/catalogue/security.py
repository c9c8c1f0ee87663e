"""ACL and SASL APIs on the shared clusters, which run without an authorizer and with
PLAINTEXT listeners only: the refusals a client meets there.

ACL refusals by an authorizer (TOPIC_AUTHORIZATION_FAILED and friends) need brokers started
with ``authorizer.class.name``: they are not asked here (the shared clusters cannot have one),
and are left to a later step with a 1-broker pair of each system of their own.
"""

from __future__ import annotations

from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation,
                                   AclPermissionType, ResourcePatternType, ResourceType)

from kafkalite.testing.conformance import clients, raw
from kafkalite.testing.conformance.scenario import Context, Family

family = Family("security")
scenario = family.scenario


def _binding(ctx: Context) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, ctx.name("t"), ResourcePatternType.LITERAL,
                      "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)


@scenario("describe-acls-no-authorizer", "DescribeAcls")
def describe_acls_no_authorizer(ctx: Context) -> object:
    """DescribeAcls v2 (raw, for the message) and AdminClient.describe_acls with no
    authorizer."""
    answer = raw.call(ctx.addresses[0], 29, 2, {
        "resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
        "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1})
    client = clients.admin(ctx)
    acl_filter = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    result = clients.outcome(client.describe_acls(acl_filter, request_timeout=10),
                             ctx.timeout_s)
    return {"raw": [answer["error_code"], bool(answer["error_message"]), answer["resources"]],
            "admin": result if isinstance(result, dict) else len(result)}


@scenario("create-acls-no-authorizer", "CreateAcls")
def create_acls_no_authorizer(ctx: Context) -> object:
    """CreateAcls v2 and AdminClient.create_acls with no authorizer."""
    answer = raw.call(ctx.addresses[0], 30, 2, {"creations": [{
        "resource_type": 2, "resource_name": ctx.name("t"), "resource_pattern_type": 3,
        "principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3}]})
    client = clients.admin(ctx)
    binding = _binding(ctx)
    result = clients.outcome(client.create_acls([binding], request_timeout=10)[binding],
                             ctx.timeout_s)
    return {"raw": [[r["error_code"], bool(r["error_message"])] for r in answer["results"]],
            "admin": result}


@scenario("delete-acls-no-authorizer", "DeleteAcls")
def delete_acls_no_authorizer(ctx: Context) -> object:
    """DeleteAcls v2 and AdminClient.delete_acls with no authorizer."""
    answer = raw.call(ctx.addresses[0], 31, 2, {"filters": [{
        "resource_type_filter": 2, "resource_name_filter": ctx.name("t"),
        "pattern_type_filter": 3, "principal_filter": None, "host_filter": None,
        "operation": 1, "permission_type": 1}]})
    client = clients.admin(ctx)
    acl_filter = AclBindingFilter(ResourceType.TOPIC, ctx.name("t"), ResourcePatternType.LITERAL,
                                  None, None, AclOperation.ANY, AclPermissionType.ANY)
    result = clients.outcome(client.delete_acls([acl_filter], request_timeout=10)[acl_filter],
                             ctx.timeout_s)
    return {"raw": [[r["error_code"], bool(r["error_message"]), r["matching_acls"]]
                    for r in answer["filter_results"]],
            "admin": result if isinstance(result, dict) else len(result)}


@scenario("create-acls-invalid", "CreateAcls")
def create_acls_invalid(ctx: Context) -> object:
    """CreateAcls with a resource type of ANY and an operation of ANY: refused before any
    authorizer is asked? (Kafka checks the authorizer first.)"""
    answer = raw.call(ctx.addresses[0], 30, 2, {"creations": [{
        "resource_type": 1, "resource_name": "x", "resource_pattern_type": 3,
        "principal": "User:alice", "host": "*", "operation": 1, "permission_type": 3}]})
    return [r["error_code"] for r in answer["results"]]


@scenario("sasl-handshake-on-plaintext", "SaslHandshake")
def sasl_handshake_on_plaintext(ctx: Context) -> object:
    """SaslHandshake v1 on a PLAINTEXT listener: the error and the mechanisms offered."""
    answer = raw.call(ctx.addresses[0], 17, 1, {"mechanism": "PLAIN"})
    if isinstance(answer, str):
        return answer
    return [answer["error_code"], answer["mechanisms"]]


@scenario("sasl-authenticate-on-plaintext", "SaslAuthenticate")
def sasl_authenticate_on_plaintext(ctx: Context) -> object:
    """SaslAuthenticate v2 on a PLAINTEXT listener, with no handshake before it."""
    answer = raw.call(ctx.addresses[0], 36, 2, {"auth_bytes": b"\x00alice\x00secret"})
    if isinstance(answer, str):
        return answer
    return [answer["error_code"], bool(answer["error_message"]), answer["auth_bytes"]]
