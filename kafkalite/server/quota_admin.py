"""Client quotas read and written for KIP-546's APIs, as Kafka 2.8's ZkAdminManager
describeClientQuotas / alterClientQuotas do them in ZooKeeper mode: the same filters (exact name,
default entity, any name; strict), the same checks and messages, the same znodes and
notifications (``zk.quotas.QuotaZkStore``).

Both functions block on ZooKeeper: run them through ``TwistedZk.run``. They take and give the
model's entries (``protocol.messages``).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import Iterable

from zk_schema import config as s_config

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.server.quota_values import (
    hash_map_order, java_double_to_string, java_parse_double, saturating_int, saturating_long,
)

log = logging.getLogger(__name__)

__all__ = ["USER", "CLIENT_ID", "IP", "describe_client_quotas", "alter_client_quotas",
           "QUOTA_KEYS"]

USER, CLIENT_ID, IP = "user", "client-id", "ip"           # Kafka's ClientQuotaEntity types
PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE = "producer_byte_rate", "consumer_byte_rate"
REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE = "request_percentage", "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
LONG, INT, DOUBLE, STRING = "LONG", "INT", "DOUBLE", "STRING"

#: QuotaConfigs' user/client quota keys and their types (the describable quotas)
QUOTA_KEYS = {PRODUCER_BYTE_RATE: LONG, CONSUMER_BYTE_RATE: LONG, REQUEST_PERCENTAGE: DOUBLE,
              CONTROLLER_MUTATION_RATE: DOUBLE}
#: DynamicConfig.User: the quotas and the SCRAM credentials that share the user's znode
_USER_KEYS = {"SCRAM-SHA-256": STRING, "SCRAM-SHA-512": STRING, **QUOTA_KEYS}
_IP_KEYS = {CONNECTION_CREATION_RATE: INT}
_EPSILON = 1e-6

_ANY = object()          # a filter component matching any name (Kafka's null match)
_ABSENT = object()       # no component of that entity type (Scala's None)


class _IllegalState(Exception):
    """Kafka's IllegalStateException / IllegalArgumentException: UNKNOWN_SERVER_ERROR."""


# --- describe ------------------------------------------------------------------------------------

def describe_client_quotas(store, components: Iterable[m.QuotaFilterComponent], strict: bool
                           ) -> m.DescribeClientQuotasResponse:
    """The entities matching the filter, each with its quota values; a bad filter or bad data
    is the request's error, as Kafka's handler throwing."""
    try:
        entries = _describe(store, list(components), strict)
    except errors.KafkaError as exc:
        return m.DescribeClientQuotasRequest().error_response(exc.code, exc.message)
    except Exception:  # noqa: BLE001 - Kafka's UNKNOWN_SERVER_ERROR, with no message
        log.exception("Error describing client quotas")
        return m.DescribeClientQuotasRequest().error_response(errors.UnknownServerError.code)
    return m.DescribeClientQuotasResponse(entries=[
        m.QuotaEntry([m.QuotaEntityPart(t, n) for t, n in entity],
                     [m.QuotaValue(k, v) for k, v in values.items()])
        for entity, values in entries.items()])


def _selection(component: m.QuotaFilterComponent):
    """A component's Option[String] of Kafka: the name, None (the default) or _ANY."""
    if component.match_type == m.QUOTA_MATCH_EXACT:
        if component.match is None:               # Optional.of(null): a NullPointerException
            raise _IllegalState("exact match without a name")
        return component.match
    if component.match_type == m.QUOTA_MATCH_DEFAULT:
        return None
    if component.match_type == m.QUOTA_MATCH_ANY:
        return _ANY
    raise _IllegalState(f"Unexpected match type: {component.match_type}")


def _describe(store, components: list[m.QuotaFilterComponent], strict: bool) -> dict:
    selections = [(c.entity_type, _selection(c)) for c in components]   # the request's filter()
    chosen = {USER: _ABSENT, CLIENT_ID: _ABSENT, IP: _ABSENT}
    names = {USER: "user", CLIENT_ID: "client", IP: "ip"}
    for entity_type, selection in selections:
        if entity_type in chosen:
            if chosen[entity_type] is not _ABSENT:
                raise errors.InvalidRequestError(
                    f"Duplicate {names[entity_type]} filter component entity type")
            chosen[entity_type] = selection
        elif entity_type == "":
            raise errors.InvalidRequestError("Unexpected empty filter component entity type")
        else:
            raise errors.UnsupportedVersionError(
                f"Custom entity type '{entity_type}' not supported")
    user, client, ip = chosen[USER], chosen[CLIENT_ID], chosen[IP]
    if (user is not _ABSENT or client is not _ABSENT) and ip is not _ABSENT:
        raise errors.InvalidRequestError(
            "Invalid entity filter component combination, IP filter component should not be "
            "used with user or clientId filter component.")
    found: dict = {}
    if ip is _ABSENT:
        found.update(_user_client_quotas(store, user, client, strict))
    if user is _ABSENT and client is _ABSENT:
        found.update(_ip_quotas(store, ip, strict))
    return found


def _exact(selection) -> bool:
    return selection is not _ABSENT and selection is not _ANY


def _user_client_quotas(store, user, client, strict: bool) -> dict:
    exact_user, exact_client = _exact(user), _exact(client)
    exclude_user = strict and user is _ABSENT
    exclude_client = strict and client is _ABSENT
    candidates: list = []                 # ((user or _ABSENT, client or _ABSENT), config)
    if exact_user and exclude_client:
        candidates.append(((user, _ABSENT), store.fetch(s_config.USERS,
                                                        s_config.quota_entity_name(user))))
    elif not exclude_user and not exact_client:
        candidates += [((s_config.quota_entity_from_znode(child), _ABSENT), config)
                       for child, config in store.fetch_all(s_config.USERS).items()]
    if exclude_user and exact_client:
        candidates.append(((_ABSENT, client), store.fetch(s_config.CLIENTS,
                                                          s_config.quota_entity_name(client))))
    elif not exact_user and not exclude_client:
        candidates += [((_ABSENT, s_config.quota_entity_from_znode(child)), config)
                       for child, config in store.fetch_all(s_config.CLIENTS).items()]
    if exact_user and exact_client:
        path = s_config.user_client_entity_path(s_config.quota_entity_name(user),
                                                s_config.quota_entity_name(client))
        candidates.append(((user, client), store.fetch(s_config.USERS, path)))
    elif not exclude_user and not exclude_client:
        for path, config in store.fetch_all_user_clients().items():
            user_child, _, client_child = path.split("/")
            candidates.append(((s_config.quota_entity_from_znode(user_child),
                                s_config.quota_entity_from_znode(client_child)), config))

    def matches(selection, name) -> bool:
        if selection is _ABSENT:
            return name is _ABSENT or not strict
        if selection is _ANY:
            return name is not _ABSENT
        return name is not _ABSENT and name == selection

    found = {}
    for (u, c), config in candidates:
        quotas = {k: v for k, v in config.items() if k in QUOTA_KEYS}
        if quotas and matches(user, u) and matches(client, c):
            entity = tuple((t, n) for t, n in ((USER, u), (CLIENT_ID, c)) if n is not _ABSENT)
            found[entity] = _values(quotas)
    return found


def _ip_quotas(store, ip, strict: bool) -> dict:
    if _exact(ip):
        candidates = [(ip, store.fetch(s_config.IPS, s_config.quota_entity_name(ip)))]
    elif ip is _ANY or (ip is _ABSENT and not strict):
        candidates = [(s_config.quota_entity_from_znode(child), config)
                      for child, config in store.fetch_all(s_config.IPS).items()]
    else:
        candidates = []
    found = {}
    for name, config in candidates:
        quotas = {k: v for k, v in config.items() if k in _IP_KEYS}
        if quotas:
            found[((IP, name),)] = _values(quotas)
    return found


def _values(config: dict[str, str]) -> dict[str, float]:
    try:
        return {key: java_parse_double(value) for key, value in config.items()}
    except ValueError as exc:
        raise _IllegalState(f"Unexpected client quota configuration value: {config}") from exc


# --- alter ---------------------------------------------------------------------------------------

def alter_client_quotas(store, entries: Iterable[m.QuotaAlteration], validate_only: bool
                        ) -> m.AlterClientQuotasResponse:
    """One answer per entity (an entity named twice: its last alteration's answer, in its first
    place), each alteration applied alone, as Kafka's."""
    answers: dict = {}
    for entry in entries:
        entity = {}
        for part in entry.entity:                   # a HashMap: a type named twice, last wins
            entity[part.entity_type] = part.entity_name
        order = hash_map_order(entity, len(entry.entity))
        key = frozenset(entity.items())             # ClientQuotaEntity's equality
        try:
            _alter_entity(store, entity, order, entry.ops, validate_only)
            error = (errors.NONE, None)
        except errors.KafkaError as exc:
            log.info("Error encountered while updating client quotas", exc_info=True)
            error = (exc.code, exc.message)
        except Exception:  # noqa: BLE001 - Kafka's UNKNOWN_SERVER_ERROR, with no message
            log.info("Error encountered while updating client quotas", exc_info=True)
            error = (errors.UnknownServerError.code, None)
        answers[key] = (error, [m.QuotaEntityPart(t, entity[t]) for t in order])
    return m.AlterClientQuotasResponse(entries=[
        m.QuotaAlterationResult(code, message, parts)
        for (code, message), parts in answers.values()])


def _alter_entity(store, entity: dict, order: list[str], ops, validate_only: bool) -> None:
    if not entity:
        raise errors.InvalidRequestError("Invalid empty client quota entity")
    names = {}
    for entity_type in order:
        name = entity[entity_type]
        if entity_type not in (USER, CLIENT_ID, IP):
            raise errors.InvalidRequestError(
                f"Unhandled client quota entity type: {entity_type}")
        if name == "":
            raise errors.InvalidRequestError(f"Empty {entity_type} not supported")
        names[entity_type] = s_config.quota_entity_name(name)
    user, client, ip = names.get(USER), names.get(CLIENT_ID), names.get(IP)
    if user is not None and client is not None and ip is None:
        config_type, path, keys = s_config.USERS, s_config.user_client_entity_path(
            user, client), _USER_KEYS
    elif user is not None and client is None and ip is None:
        config_type, path, keys = s_config.USERS, user, _USER_KEYS
    elif user is None and client is not None and ip is None:
        config_type, path, keys = s_config.CLIENTS, client, QUOTA_KEYS
    elif user is None and client is None and ip is not None:
        if not _valid_ip_entity(ip):
            raise errors.InvalidRequestError(f"{ip} is not a valid IP or resolvable host.")
        config_type, path, keys = s_config.IPS, ip, _IP_KEYS
    elif ip is not None:
        raise errors.InvalidRequestError(
            "Invalid quota entity combination, IP entity should not be used with user/client "
            "ID entity.")
    else:
        raise errors.InvalidRequestError("Invalid client quota entity")

    config = store.fetch(config_type, path)
    for op in ops:
        if op.remove:
            config.pop(op.key, None)
            continue
        kind = keys.get(op.key)
        if kind is None:
            raise errors.InvalidRequestError(f"Invalid configuration key {op.key}")
        if kind == DOUBLE:
            config[op.key] = java_double_to_string(op.value)
        elif kind in (LONG, INT):
            whole = (saturating_long if kind == LONG else saturating_int)(op.value + _EPSILON)
            if not abs(float(whole) - op.value) <= _EPSILON:
                raise errors.InvalidRequestError(f"Configuration {op.key} must be a {kind} value")
            config[op.key] = str(whole)
        else:
            raise _IllegalState(f"Unexpected config type {kind}")
    if not validate_only:
        _validate_stored(config_type, path, config)
        store.change(config_type, path, config)


def _validate_stored(config_type: str, path: str, config: dict[str, str]) -> None:
    """AdminZkClient.changeConfigs' DynamicConfig checks: only the entity's keys (a default user
    or a (user, client-id) takes a client's), non-negative connection rates. Kafka's
    IllegalArgumentException / ConfigException: UNKNOWN_SERVER_ERROR."""
    if config_type == s_config.USERS and (path == s_config.DEFAULT_ENTITY or "/clients" in path):
        allowed = QUOTA_KEYS
    else:
        allowed = {s_config.USERS: _USER_KEYS, s_config.CLIENTS: QUOTA_KEYS}.get(config_type,
                                                                               _IP_KEYS)
    unknown = [key for key in config if key not in allowed]
    if unknown:
        raise _IllegalState(f"Unknown Dynamic Configuration: {unknown}.")
    rate = config.get(CONNECTION_CREATION_RATE)
    if rate is not None and int(rate) < 0:
        raise _IllegalState(f"Invalid value {rate} for configuration {CONNECTION_CREATION_RATE}")


def _valid_ip_entity(ip: str) -> bool:
    """DynamicConfig.Ip.isValidIpEntity: the default, an address, or a name that resolves."""
    if ip == s_config.DEFAULT_ENTITY:
        return True
    try:
        ipaddress.ip_address(ip)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(ip, None)
        return True
    except (OSError, UnicodeError):
        return False
