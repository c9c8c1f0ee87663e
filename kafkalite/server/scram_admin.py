"""SCRAM credentials read and written for KIP-554's APIs, as Kafka 2.8's
ZkAdminManager.describeUserScramCredentials / alterUserScramCredentials do: same checks, same
order of answers, same errors and messages, and the same ``/config/users/<user>`` znodes and
``/config/changes`` notifications (``zk.credentials.UserConfigZkStore``).

Both functions block on ZooKeeper: run them through ``TwistedZk.run``. They take and give the
model's entries (``protocol.messages``).
"""

from __future__ import annotations

import logging
from typing import Iterable

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.security.scram import (
    MAX_ITERATIONS, MECHANISM_TYPES, MIN_ITERATIONS, credential_from_salted_password,
    credential_from_string, credential_to_string,
)

log = logging.getLogger(__name__)

__all__ = ["describe_user_scram_credentials", "alter_user_scram_credentials"]

_EMPTY_USER = "Username must not be empty"
_UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
_TOO_FEW = "Too few iterations"
_TOO_MANY = "Too many iterations"
_UNKNOWN_SERVER_ERROR = "The server experienced an unexpected error when processing the request."
_MECHANISM_ORDER = sorted(MECHANISM_TYPES.items())        # SHA-256, then SHA-512
# a message Kafka never sets goes out as its schema's default, the empty string (not null)
_UNSET = ""


# --- describe ------------------------------------------------------------------------------------

def describe_user_scram_credentials(store, users: list[str] | None
                                    ) -> m.DescribeUserScramCredentialsResponse:
    """Every user with a credential (sorted) when ``users`` is None or empty, else each named
    user once, in the order first named."""
    results: dict[str, m.DescribeUserScramCredentialsResult] = {}
    try:
        if not users:
            # Kafka names each user by its znode, the sanitized name (fetchAllEntityConfigs)
            for child in store.users_as_stored():
                result = _described(child, store.get_stored(child), explicit=False)
                if result is not None:
                    results[child] = result
            return m.DescribeUserScramCredentialsResponse(
                error_message=_UNSET, results=[results[user] for user in sorted(results)])
        counts: dict[str, int] = {}
        for user in users:
            counts[user] = counts.get(user, 0) + 1
        for user in counts:
            if not user:
                results[user] = _user_error(user, errors.ResourceNotFoundError, _EMPTY_USER)
            elif counts[user] > 1:
                results[user] = _user_error(
                    user, errors.DuplicateResourceError, "Cannot describe SCRAM credentials for "
                    f"the same user twice in a single request: {user}")
        for user in users:
            if user in results:
                continue
            try:
                results[user] = _described(user, store.get(user), explicit=True)
            except Exception:  # noqa: BLE001 - Kafka answers the user, not the request
                log.exception("Error processing describe user SCRAM credential configs request")
                results[user] = m.DescribeUserScramCredentialsResult(
                    user, errors.UnknownServerError.code, _UNKNOWN_SERVER_ERROR, [])
        return m.DescribeUserScramCredentialsResponse(
            error_message=_UNSET, results=[results[user] for user in dict.fromkeys(users)])
    except Exception:  # noqa: BLE001 - ZooKeeper failed listing users: the request's error
        log.exception("Error processing describe user SCRAM credential configs request")
        return m.DescribeUserScramCredentialsResponse(
            error_code=errors.UnknownServerError.code, error_message=_UNKNOWN_SERVER_ERROR)


def _described(user: str, config: dict[str, str], explicit: bool
               ) -> m.DescribeUserScramCredentialsResult | None:
    present = [(kind, name) for kind, name in _MECHANISM_ORDER if name in config]
    if not present:
        if not explicit:
            return None
        return _user_error(user, errors.ResourceNotFoundError,
                           f"Attempt to describe a user credential that does not exist: {user}")
    try:
        infos = [m.ScramCredentialInfo(kind, credential_from_string(config[name]).iterations)
                 for kind, name in present]
    except ValueError:           # bad data in ZooKeeper: Kafka's IllegalArgumentException
        log.exception("Error processing describe user SCRAM credential configs request")
        return m.DescribeUserScramCredentialsResult(user, errors.UnknownServerError.code,
                                                    _UNKNOWN_SERVER_ERROR, [])
    return m.DescribeUserScramCredentialsResult(user, errors.NONE, _UNSET, infos)


def _user_error(user: str, error: type[errors.KafkaError], message: str
                ) -> m.DescribeUserScramCredentialsResult:
    return m.DescribeUserScramCredentialsResult(user, error.code, message, [])


# --- alter ---------------------------------------------------------------------------------------

def alter_user_scram_credentials(store, deletions: Iterable[m.ScramCredentialDeletion],
                                 upsertions: Iterable[m.ScramCredentialUpsertion]
                                 ) -> m.AlterUserScramCredentialsResponse:
    """One answer per user: a user with any invalid alteration is refused whole, its valid
    ones are not applied; the others are written, one znode and notification per user."""
    deletions, upsertions = list(deletions), list(upsertions)
    results: list[m.AlterUserScramCredentialsResult] = []

    def answer(user, error, message):
        results.append(m.AlterUserScramCredentialsResult(user, error.code if error else 0,
                                                         message))

    # 1. empty names, unknown mechanisms, iterations outside [4096, 16384]: deletions' reasons
    # first, then upsertions' (a user in both keeps its first place, the upsertion's reason)
    illegal: dict[str, str] = {}
    for d in deletions:
        if not d.name:
            illegal[d.name] = _EMPTY_USER
        elif d.mechanism not in MECHANISM_TYPES:
            illegal[d.name] = _UNKNOWN_MECHANISM
    for u in upsertions:
        if not u.name:
            illegal[u.name] = _EMPTY_USER
        elif u.mechanism not in MECHANISM_TYPES:
            illegal[u.name] = _UNKNOWN_MECHANISM
        elif u.iterations > MAX_ITERATIONS:
            illegal[u.name] = _TOO_MANY
        elif u.iterations < MIN_ITERATIONS:
            illegal[u.name] = _TOO_FEW
    for user, message in illegal.items():
        answer(user, errors.UnsupportedSaslMechanismError if message == _UNKNOWN_MECHANISM
               else errors.UnacceptableCredentialError, message)

    # 2. a (user, mechanism) altered twice: the user is refused
    pairs = ([(u.name, u.mechanism) for u in upsertions if u.name not in illegal]
             + [(d.name, d.mechanism) for d in deletions if d.name not in illegal])
    seen: set = set()
    duplicated: dict[str, None] = {}
    for pair in pairs:
        if pair in seen:
            duplicated[pair[0]] = None
        seen.add(pair)
    for user in duplicated:
        answer(user, errors.DuplicateResourceError,
               "A user credential cannot be altered twice in the same request")
    candidates = list(dict.fromkeys(user for user, _ in pairs if user not in duplicated))
    configs = {user: store.get(user) for user in candidates}

    # 3. deleting a credential the user does not have
    missing = dict.fromkeys(d.name for d in deletions if d.name in configs
                            and MECHANISM_TYPES[d.mechanism] not in configs[d.name])
    for user in missing:
        answer(user, errors.ResourceNotFoundError,
               "Attempt to delete a user credential that does not exist")

    # 4. the rest: deletions, then upsertions, then one write per user; failures are
    # answered before successes, as Kafka's
    written = []
    for user in (u for u in candidates if u not in missing):
        config = configs[user]
        try:
            for d in deletions:
                if d.name == user:
                    config.pop(MECHANISM_TYPES[d.mechanism], None)
            for u in upsertions:
                if u.name == user:
                    name = MECHANISM_TYPES[u.mechanism]
                    config[name] = credential_to_string(credential_from_salted_password(
                        name, u.salt, u.salted_password, u.iterations))
            store.replace(user, config)
        except Exception as exc:  # noqa: BLE001 - Kafka answers the user with the error's code
            log.info("Error encountered while altering user SCRAM credentials", exc_info=True)
            error = exc if isinstance(exc, errors.KafkaError) and exc.code is not None \
                else errors.UnknownServerError()
            answer(user, type(error), _UNKNOWN_SERVER_ERROR if error.code == -1
                   else type(error).description)
            continue
        written.append(user)
    for user in written:
        answer(user, None, _UNSET)
    return m.AlterUserScramCredentialsResponse(results=results)
