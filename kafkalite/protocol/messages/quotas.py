"""Client quotas (KIP-546): DescribeClientQuotas (48) and AlterClientQuotas (49).
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kafkalite.errors import NONE
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages.base import Int16, Int32, Int8, Request, Response, _message


# ================================================================================================
# DescribeClientQuotas (48), AlterClientQuotas (49): KIP-546 (server.quota_apis)
# ================================================================================================

QUOTA_MATCH_EXACT, QUOTA_MATCH_DEFAULT, QUOTA_MATCH_ANY = 0, 1, 2


class QuotaEntityPart(NamedTuple):
    entity_type: str                           # "user", "client-id" or "ip"
    entity_name: str | None                    # None: the default entity of that type


class QuotaFilterComponent(NamedTuple):
    entity_type: str
    match_type: Int8                           # QUOTA_MATCH_EXACT / _DEFAULT / _ANY
    match: str | None                          # the name, for an exact match


class QuotaValue(NamedTuple):
    key: str
    value: float


class QuotaEntry(NamedTuple):
    entity: list[QuotaEntityPart]
    values: list[QuotaValue]


@_message(ApiKey.DESCRIBE_CLIENT_QUOTAS)
class DescribeClientQuotasRequest(Request):
    components: list[QuotaFilterComponent] = field(default_factory=list)
    strict: bool = False                       # only entities with no other entity types

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse: the top-level error, no entries (null)
        return DescribeClientQuotasResponse(error_code=error_code, error_message=error_message,
                                            entries=None)


@_message(ApiKey.DESCRIBE_CLIENT_QUOTAS)
class DescribeClientQuotasResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    entries: list[QuotaEntry] | None = field(default_factory=list)


class QuotaOp(NamedTuple):
    key: str
    value: float
    remove: bool                               # True: delete the key (value ignored)


class QuotaAlteration(NamedTuple):
    entity: list[QuotaEntityPart]
    ops: list[QuotaOp]


class QuotaAlterationResult(NamedTuple):
    error_code: Int16
    error_message: str | None
    entity: list[QuotaEntityPart]


#: Kafka's Errors.message of the errors a whole AlterClientQuotas may fail with: its
#: getErrorResponse answers that message, whatever the exception said
_KAFKA_ERROR_MESSAGES = {
    -1: "The server experienced an unexpected error when processing the request.",
    31: "Cluster authorization failed.",
    35: "The version of API is not supported.",
    42: "This most likely occurs because of a request being malformed by the client library or "
        "the message was sent to an incompatible broker. See the broker logs for more details.",
}


@_message(ApiKey.ALTER_CLIENT_QUOTAS)
class AlterClientQuotasRequest(Request):
    entries: list[QuotaAlteration] = field(default_factory=list)
    validate_only: bool = False

    def error_response(self, error_code, error_message=None):
        message = _KAFKA_ERROR_MESSAGES.get(error_code, error_message)
        return AlterClientQuotasResponse(entries=[
            QuotaAlterationResult(error_code, message, list(e.entity)) for e in self.entries])


@_message(ApiKey.ALTER_CLIENT_QUOTAS)
class AlterClientQuotasResponse(Response):
    throttle_time_ms: Int32 = 0
    entries: list[QuotaAlterationResult] = field(default_factory=list)
