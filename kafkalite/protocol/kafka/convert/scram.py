"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), KIP-554, between Kafka's
protocol and the model. Both have only version 0 in Kafka 2.8 (flexible)."""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter

__all__ = ["DESCRIBE_USER_SCRAM_CREDENTIALS", "ALTER_USER_SCRAM_CREDENTIALS"]


def _describe_request(entity, version: int) -> m.DescribeUserScramCredentialsRequest:
    users = None if entity.users is None else [u.name for u in entity.users]
    return m.DescribeUserScramCredentialsRequest(users=users)


def _describe_response(r: m.DescribeUserScramCredentialsResponse, version: int) -> dict:
    return {"throttle_time": r.throttle_time_ms, "error_code": r.error_code,
            "error_message": r.error_message,
            "results": [{"user": x.user, "error_code": x.error_code,
                         "error_message": x.error_message,
                         "credential_infos": [{"mechanism": c.mechanism,
                                               "iterations": c.iterations}
                                              for c in x.credential_infos]}
                        for x in r.results]}


DESCRIBE_USER_SCRAM_CREDENTIALS = Converter(_describe_request, _describe_response)


def _alter_request(entity, version: int) -> m.AlterUserScramCredentialsRequest:
    return m.AlterUserScramCredentialsRequest(
        deletions=[m.ScramCredentialDeletion(d.name, int(d.mechanism))
                   for d in entity.deletions],
        upsertions=[m.ScramCredentialUpsertion(u.name, int(u.mechanism), int(u.iterations),
                                               bytes(u.salt), bytes(u.salted_password))
                    for u in entity.upsertions])


ALTER_USER_SCRAM_CREDENTIALS = Converter(
    _alter_request,
    lambda r, version: {"throttle_time": r.throttle_time_ms, "results": [
        {"user": x.user, "error_code": x.error_code, "error_message": x.error_message}
        for x in r.results]})
