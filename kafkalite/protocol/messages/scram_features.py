"""SCRAM credentials through the brokers (KIP-554): DescribeUserScramCredentials (50),
AlterUserScramCredentials (51); finalized features (KIP-584): UpdateFeatures (57).
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kafkalite.errors import NONE
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages.base import Int16, Int32, Int8, Request, Response, _message


# ================================================================================================
# SCRAM credentials through the brokers (KIP-554): DescribeUserScramCredentials (50) and
# AlterUserScramCredentials (51); finalized features (KIP-584): UpdateFeatures (57). Mechanisms are
# Kafka's ScramMechanism types: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
# ================================================================================================


class ScramCredentialInfo(NamedTuple):
    mechanism: Int8
    iterations: Int32


class DescribeUserScramCredentialsResult(NamedTuple):
    user: str
    error_code: Int16
    error_message: str | None
    credential_infos: list[ScramCredentialInfo]


@_message(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
class DescribeUserScramCredentialsRequest(Request):
    users: list[str] | None = None             # None or empty: every user with a credential

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse: the top-level error only
        return DescribeUserScramCredentialsResponse(error_code=error_code,
                                                    error_message=error_message)


@_message(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
class DescribeUserScramCredentialsResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    results: list[DescribeUserScramCredentialsResult] = field(default_factory=list)


class ScramCredentialDeletion(NamedTuple):
    name: str
    mechanism: Int8


class ScramCredentialUpsertion(NamedTuple):
    name: str
    mechanism: Int8
    iterations: Int32
    salt: bytes
    salted_password: bytes                     # Hi(password, salt, iterations): never the password


class AlterUserScramCredentialsResult(NamedTuple):
    user: str
    error_code: Int16
    error_message: str | None


@_message(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
class AlterUserScramCredentialsRequest(Request):
    deletions: list[ScramCredentialDeletion] = field(default_factory=list)
    upsertions: list[ScramCredentialUpsertion] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse: each user named, once, sorted, with the error
        users = sorted({d.name for d in self.deletions} | {u.name for u in self.upsertions})
        return AlterUserScramCredentialsResponse(results=[
            AlterUserScramCredentialsResult(user, error_code, error_message) for user in users])


@_message(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
class AlterUserScramCredentialsResponse(Response):
    throttle_time_ms: Int32 = 0
    results: list[AlterUserScramCredentialsResult] = field(default_factory=list)


class FeatureUpdate(NamedTuple):
    feature: str
    max_version_level: Int16                   # < 1 with allow_downgrade: delete the feature
    allow_downgrade: bool


class UpdatableFeatureResult(NamedTuple):
    feature: str
    error_code: Int16
    error_message: str | None


@_message(ApiKey.UPDATE_FEATURES)
class UpdateFeaturesRequest(Request):
    timeout_ms: Int32 = 60000
    feature_updates: list[FeatureUpdate] = field(default_factory=list)

    def error_response(self, error_code, error_message=None):
        # Kafka's getErrorResponse: the top-level error and no results
        return UpdateFeaturesResponse(error_code=error_code, error_message=error_message)


@_message(ApiKey.UPDATE_FEATURES)
class UpdateFeaturesResponse(Response):
    throttle_time_ms: Int32 = 0
    error_code: Int16 = NONE
    error_message: str | None = None
    results: list[UpdatableFeatureResult] = field(default_factory=list)
