"""SCRAM credentials through the brokers (KIP-554: DescribeUserScramCredentials,
AlterUserScramCredentials) and finalized features (KIP-584: UpdateFeatures, ApiVersions v3's
feature fields): what librdkafka's admin calls get, and Kafka 2.8's raw answers, error codes and
messages included, at the controller and away from it."""

from __future__ import annotations

import hashlib

from confluent_kafka.admin import (ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialDeletion, UserScramCredentialUpsertion)
from scramp.core import hi

from kafkalite.testing.conformance import clients, raw
from kafkalite.testing.conformance.scenario import Context, Family

family = Family("admin")          # reported with the other admin APIs
scenario = family.scenario

_SHA256, _SHA512 = 1, 2
_SALT = b"conformance-salt-0123"


def _described(client, users, ctx: Context) -> dict:
    out = {}
    for user, future in client.describe_user_scram_credentials(users,
                                                               request_timeout=10).items():
        result = clients.outcome(future, ctx.timeout_s)
        out[user] = result if isinstance(result, dict) else sorted(
            [i.mechanism.name, i.iterations] for i in result.scram_credential_infos)
    return out


@scenario("alter-scram-credentials", "AlterUserScramCredentials",
          "DescribeUserScramCredentials")
def alter_scram_credentials(ctx: Context) -> object:
    """AdminClient.alter_user_scram_credentials: two mechanisms for a user, one deleted, then a
    deletion of a credential the user lacks; describe_user_scram_credentials after each."""
    client = clients.admin(ctx)
    user = ctx.name("u")

    def alter(alterations):
        futures = client.alter_user_scram_credentials(alterations, request_timeout=10)
        return {u: clients.outcome(f, ctx.timeout_s) for u, f in futures.items()}

    steps = {"upsert": alter([
        UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256,
                                                               8192), b"pw", _SALT),
        UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512,
                                                               4096), b"pw", _SALT)])}
    steps["described"] = _described(client, [user], ctx)
    steps["delete"] = alter([UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512)])
    steps["described after"] = _described(client, [user], ctx)
    steps["delete missing"] = alter([UserScramCredentialDeletion(
        user, ScramMechanism.SCRAM_SHA_512)])
    return steps


def _upsertion(name: str, mechanism: int, iterations: int) -> dict:
    digest = hashlib.sha512 if mechanism == _SHA512 else hashlib.sha256
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": _SALT,
            "salted_password": hi(digest, b"pw", _SALT, 4096)}


def _results(answer) -> object:
    if isinstance(answer, str):
        return answer
    return [[r["user"], r["error_code"], r["error_message"]] for r in answer["results"]]


@scenario("alter-scram-credentials-raw", "AlterUserScramCredentials")
def alter_scram_credentials_raw(ctx: Context) -> object:
    """AlterUserScramCredentials v0 at the controller with each of Kafka's refusals (iterations
    out of [4096, 16384], unknown mechanism, empty name, a credential altered twice, deletion
    of a missing one) beside a valid user; and at another broker."""
    controller = clients.controller_address(ctx)
    name = ctx.name
    body = {"deletions": [{"name": name("gone"), "mechanism": _SHA256}],
            "upsertions": [_upsertion(name("few"), _SHA256, 4095),
                           _upsertion(name("many"), _SHA512, 16385),
                           _upsertion(name("odd"), 3, 4096),
                           _upsertion("", _SHA256, 4096),
                           _upsertion(name("twice"), _SHA256, 4096),
                           _upsertion(name("twice"), _SHA256, 8192),
                           _upsertion(name("ok"), _SHA512, 16384)]}
    return {"controller": sorted(_results(raw.call(controller, 51, 0, body))),
            "other broker": _results(raw.call(clients.other_address(ctx, controller), 51, 0,
                                              {"deletions": [], "upsertions": [
                                                  _upsertion(name("x"), _SHA256, 4096)]}))}


@scenario("describe-scram-credentials-raw", "DescribeUserScramCredentials")
def describe_scram_credentials_raw(ctx: Context) -> object:
    """DescribeUserScramCredentials v0, at a broker that is not the controller: named users (one
    unknown, an empty name, one named twice, one with credentials) and every user (null)."""
    controller = clients.controller_address(ctx)
    user = ctx.name("d")
    written = raw.call(controller, 51, 0, {"deletions": [], "upsertions": [
        _upsertion(user, _SHA512, 8192), _upsertion(user, _SHA256, 4096)]})
    other = clients.other_address(ctx, controller)

    def describe(users):
        answer = raw.call(other, 50, 0, {"users": users})
        if isinstance(answer, str):
            return answer
        return [answer["error_code"], answer["error_message"], [
            [r["user"], r["error_code"], r["error_message"],
             [[c["mechanism"], c["iterations"]] for c in r["credential_infos"]]]
            for r in answer["results"] if users is not None or r["user"] == user]]
    return {"written": _results(written),
            "named": describe([{"name": n} for n in (ctx.name("nobody"), "", user,
                                                     ctx.name("x"), ctx.name("x"))]),
            "all": describe(None)}


def _update(address: str, updates: list[tuple[str, int, bool]]) -> object:
    answer = raw.call(address, 57, 0, {"timeout": 10000, "feature_updates": [
        {"feature": f, "max_version_level": level, "allow_downgrade": down}
        for f, level, down in updates]})
    if isinstance(answer, str):
        return answer
    return [answer["error_code"], answer["error_message"],
            [[r["feature"], r["error_code"], r["error_message"]] for r in answer["results"]]]


@scenario("update-features", "UpdateFeatures")
def update_features(ctx: Context) -> object:
    """UpdateFeatures v0: Kafka 2.8 supports no feature, so at the controller each update is
    refused with its reason; away from it, NOT_CONTROLLER."""
    controller = clients.controller_address(ctx)
    return {"add": _update(controller, [("ghost.feature", 1, False)]),
            "delete missing": _update(controller, [("ghost.feature", 0, True)]),
            "level 0 without downgrade": _update(controller, [("ghost.feature", 0, False)]),
            "empty name": _update(controller, [("", 2, False)]),
            "nothing": _update(controller, []),
            # answered in the order of Kafka's HashMap of results, not the request's
            "several": _update(controller, [("b", 1, False), ("q", 0, True), ("a", 1, False),
                                            ("zz.feature", 0, False), ("", 1, False)]),
            "other broker": _update(clients.other_address(ctx, controller),
                                    [("ghost.feature", 1, False)])}


@scenario("api-versions-features", "ApiVersions")
def api_versions_features(ctx: Context) -> object:
    """ApiVersions v3's KIP-584 fields on every broker: no supported feature, none finalized,
    and the epoch of ``/feature`` as the controller left it."""
    out = {}
    for address in ctx.addresses:
        answer = raw.call(address, 18, 3, {"client_software_name": "conformance",
                                           "client_software_version": "1.0"})
        out[len(out)] = [answer["supported_features"], answer["finalized_features_epoch"],
                         answer["finalized_features"]]
    return out
