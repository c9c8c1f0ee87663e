"""The delegation token handlers (server/delegation_token_apis.py) driven through the API table
and the real connection pipeline, for both protocols, over a real DelegationTokenManager whose
ZooKeeper is an in-memory stand-in (the real one is exercised by
tests/tools/test_tool_delegation_tokens.py). Kafka 2.8's answers: refused on PLAINTEXT and on
token-authenticated connections, disabled without a secret key, owner/renewer checks, unknown and
expired tokens, Describe's filters."""

from __future__ import annotations

import itertools
import struct
from types import SimpleNamespace

import pytest
from kio.serial.errors import OutOfBoundValue
from pipeline_driver import connect, kafka_frame, native_frame, read_frames, read_native_responses
from twisted.internet import defer

from kafkalite.protocol import messages as m
from kafkalite.protocol.envelope import encode_request_payload
from kafkalite.protocol.kafka import codec as kafka_codec
from kafkalite.protocol.framing import encode_frame
from kafkalite.security.acl import ResourceType
from kafkalite.security.delegation_tokens import create_hmac
from kafkalite.server.connection_security import ConnectionSecurity
from kafkalite.server.delegation_token_manager import DelegationTokenManager
from kafkalite.server.dispatch import ApiDispatcher
from kafkalite.zk.delegation_tokens import DelegationTokenZkStore
from zk_schema import delegation_tokens as s_tokens

KAFKA, NATIVE = "kafka", "native"
PROTOCOLS = [KAFKA, NATIVE]
KEY = "secret"
DISABLED, NOT_FOUND, MISMATCH, NOT_ALLOWED, EXPIRED, BAD_TYPE = 61, 62, 63, 64, 66, 67
DAY, WEEK = 86_400_000, 604_800_000


class MemoryZnodes:
    """The few ZnodeOps the token store uses, in memory."""

    def __init__(self):
        self.data: dict[str, bytes] = {}
        self._seq = itertools.count()

    def ensure_path(self, path):
        self.data.setdefault(path, b"")

    def get_children(self, path):
        return sorted(p[len(path) + 1:] for p in self.data
                      if p.startswith(path + "/") and "/" not in p[len(path) + 1:])

    def get_data(self, path):
        return None if path not in self.data else (self.data[path], 0)

    def _get_with_stat(self, path):
        return None if path not in self.data else (self.data[path], SimpleNamespace(ctime=0))

    def _create_or_set(self, path, data, acl=None):
        self.data[path] = data
        return 0

    def create(self, path, data=b"", *, sequence=False, **_):
        if sequence:
            path = f"{path}{next(self._seq):010d}"
        self.data[path] = data
        return path

    def delete(self, path, version=-1, *, recursive=False):
        return self.data.pop(path, None) is not None


class SyncZk:
    def run(self, fn, *args):
        return defer.maybeDeferred(fn, *args)


class Clock:
    def __init__(self, now=1_000_000):
        self.now = now

    def __call__(self):
        return self.now


class Security(ConnectionSecurity):
    """A connection that authenticated as ``principal`` (with a token, if told)."""

    def __init__(self, principal, token=False):
        super().__init__(None)
        self.principal = principal
        self._token = token

    @property
    def token_authenticated(self):
        return self._token


class DenyAuthorizer:
    """Lets nobody Describe tokens (they still see their own)."""

    def authorize(self, principal, host, operation, resource_type, name, log_denied=True):
        return resource_type != ResourceType.DELEGATION_TOKEN


def _broker(secret=KEY, authorizer=None, clock=None):
    manager = DelegationTokenManager(secret, WEEK, DAY, 3_600_000, now_ms=clock or Clock())
    zk = MemoryZnodes()
    if manager.enabled:       # what start() does, without the watch and the expiry loop
        manager._store, manager._deferred_zk = DelegationTokenZkStore(zk), SyncZk()
        manager._store.create_paths()
    return SimpleNamespace(config=None, zk=zk, security=SimpleNamespace(
        authorizer=authorizer, tokens=manager))


def _call(broker, protocol, api_key, kafka_body, native_request, principal="User:alice",
          listener_protocol="SASL_PLAINTEXT", token=False):
    connection, transport = connect(ApiDispatcher(broker), security=Security(principal, token))
    connection.factory = SimpleNamespace(listener_name="SASL",
                                         listener_security=SimpleNamespace(
                                             protocol=listener_protocol))
    if protocol == KAFKA:
        connection.dataReceived(kafka_frame(api_key, 2, 7, kafka_body))
        [payload] = read_frames(transport)
        try:
            return kafka_codec.decode_response(api_key, 2, payload)[1]
        except OutOfBoundValue:    # kio reads no -1 timestamp, which Kafka sends on errors
            return _error_answer(api_key, payload)
    else:
        connection.dataReceived(native_frame(native_request, 7))
        [(_, answer)] = read_native_responses(transport, [api_key])
    return answer


def _error_answer(api_key, payload):
    """An error answer read off the wire (v2, flexible: the header's tagged fields are one
    byte): the error code, every timestamp -1, and Create's principal."""
    (code,) = struct.unpack_from(">h", payload, 5)
    answer = SimpleNamespace(error_code=code, raw=payload)
    if api_key == 38:
        pos, names = 7, []
        for _ in range(2):                     # compact strings: length + 1, then the bytes
            length = payload[pos] - 1
            names.append(payload[pos + 1:pos + 1 + length].decode())
            pos += 1 + length
        answer.principal_type, answer.principal_name = names
        assert struct.unpack_from(">qqq", payload, pos) == (-1, -1, -1)
    elif api_key in (39, 40):
        assert struct.unpack_from(">q", payload, 7) == (-1,)
    return answer


def _create(broker, protocol, renewers=("User:bob",), max_life=-1, **kw):
    pairs = [r.split(":", 1) for r in renewers]
    return _call(broker, protocol, 38,
                 {"renewers": [{"principal_type": t, "principal_name": n} for t, n in pairs],
                  "max_lifetime": max_life},
                 m.CreateDelegationTokenRequest(
                     renewers=[m.TokenPrincipal(t, n) for t, n in pairs],
                     max_lifetime_ms=max_life), **kw)


def _renew(broker, protocol, hmac, period=-1, **kw):
    return _call(broker, protocol, 39, {"hmac": hmac, "renew_period": period},
                 m.RenewDelegationTokenRequest(hmac=hmac, renew_period_ms=period), **kw)


def _expire(broker, protocol, hmac, period=-1, **kw):
    return _call(broker, protocol, 40, {"hmac": hmac, "expiry_time_period": period},
                 m.ExpireDelegationTokenRequest(hmac=hmac, expiry_time_period_ms=period), **kw)


def _describe(broker, protocol, owners=None, **kw):
    pairs = None if owners is None else [o.split(":", 1) for o in owners]
    return _call(broker, protocol, 41,
                 {"owners": None if pairs is None else [
                     {"principal_type": t, "principal_name": n} for t, n in pairs]},
                 m.DescribeDelegationTokenRequest(
                     owners=None if pairs is None else [m.TokenPrincipal(*p) for p in pairs]),
                 **kw)


def _ms(value):
    return value if isinstance(value, int) else round(value.timestamp() * 1000)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_create_stores_the_token_in_kafkas_znode_and_answers_its_hmac(protocol):
    clock = Clock()
    broker = _broker(clock=clock)
    answer = _create(broker, protocol)
    assert int(answer.error_code) == 0
    assert (answer.principal_type, answer.principal_name) == ("User", "alice")
    assert bytes(answer.hmac) == create_hmac(answer.token_id, KEY)
    assert [_ms(answer.issue_timestamp if protocol == KAFKA else answer.issue_timestamp_ms),
            _ms(answer.expiry_timestamp if protocol == KAFKA else answer.expiry_timestamp_ms),
            _ms(answer.max_timestamp if protocol == KAFKA else answer.max_timestamp_ms)] == [
        clock.now, clock.now + DAY, clock.now + WEEK]
    stored = s_tokens.TokenInfo.decode(broker.zk.data[s_tokens.token_path(answer.token_id)])
    assert (stored.owner, stored.renewers) == ("User:alice", ("User:bob",))
    assert [s_tokens.decode_change(broker.zk.data[p]) for p in broker.zk.data
            if p.startswith(s_tokens.TOKEN_CHANGES_PATH + "/")] == [answer.token_id]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_short_max_lifetime_caps_the_expiry(protocol):
    clock = Clock()
    answer = _create(_broker(clock=clock), protocol, max_life=60_000)
    expiry = answer.expiry_timestamp if protocol == KAFKA else answer.expiry_timestamp_ms
    assert _ms(expiry) == clock.now + 60_000


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_token_requests_are_refused_on_plaintext_and_token_connections(protocol):
    broker = _broker()
    for kw in ({"listener_protocol": "PLAINTEXT", "principal": "User:ANONYMOUS"},
               {"token": True},
               {"listener_protocol": "SSL", "principal": "User:ANONYMOUS"}):
        assert int(_create(broker, protocol, **kw).error_code) == NOT_ALLOWED
        assert int(_renew(broker, protocol, b"x", **kw).error_code) == NOT_ALLOWED
        assert int(_expire(broker, protocol, b"x", **kw).error_code) == NOT_ALLOWED
        assert int(_describe(broker, protocol, **kw).error_code) == NOT_ALLOWED
    # an SSL client with a certificate may
    assert int(_describe(broker, protocol, listener_protocol="SSL",
                         principal="User:CN=app").error_code) == 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_without_a_secret_key_tokens_are_disabled(protocol):
    broker = _broker(secret=None)
    created = _create(broker, protocol)
    assert (int(created.error_code), created.principal_name) == (DISABLED, "alice")
    assert int(_renew(broker, protocol, b"x").error_code) == DISABLED
    assert int(_expire(broker, protocol, b"x").error_code) == DISABLED
    assert int(_describe(broker, protocol).error_code) == DISABLED


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_renewers_must_be_users(protocol):
    assert int(_create(_broker(), protocol, renewers=("Group:x",)).error_code) == BAD_TYPE


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_renew_and_expire_by_owner_or_renewer_only(protocol):
    clock = Clock()
    broker = _broker(clock=clock)
    hmac = bytes(_create(broker, protocol).hmac)
    assert int(_renew(broker, protocol, hmac, principal="User:carol").error_code) == MISMATCH
    assert int(_expire(broker, protocol, hmac, principal="User:carol").error_code) == MISMATCH
    assert int(_renew(broker, protocol, b"unknown").error_code) == NOT_FOUND
    clock.now += 1000
    renewed = _renew(broker, protocol, hmac, 5_000, principal="User:bob")
    expiry = renewed.expiry_timestamp if protocol == KAFKA else renewed.expiry_timestamp_ms
    assert (int(renewed.error_code), _ms(expiry)) == (0, clock.now + 5_000)
    # an expiry period moves the expiry; a negative one removes the token now
    moved = _expire(broker, protocol, hmac, 2_000)
    expiry = moved.expiry_timestamp if protocol == KAFKA else moved.expiry_timestamp_ms
    assert (int(moved.error_code), _ms(expiry)) == (0, clock.now + 2_000)
    gone = _expire(broker, protocol, hmac, -1)
    expiry = gone.expiry_timestamp if protocol == KAFKA else gone.expiry_timestamp_ms
    assert (int(gone.error_code), _ms(expiry)) == (0, clock.now)
    assert int(_renew(broker, protocol, hmac).error_code) == NOT_FOUND
    assert broker.security.tokens.cache.tokens() == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_expired_token_cannot_be_renewed_and_the_expiry_check_removes_it(protocol):
    clock = Clock()
    broker = _broker(clock=clock)
    hmac = bytes(_create(broker, protocol).hmac)
    clock.now += DAY + 1
    assert int(_renew(broker, protocol, hmac).error_code) == EXPIRED
    assert int(_expire(broker, protocol, hmac).error_code) == EXPIRED
    broker.security.tokens.expire_tokens()
    assert int(_renew(broker, protocol, hmac).error_code) == NOT_FOUND
    assert broker.zk.get_children(s_tokens.TOKENS_PATH) == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_shows_own_renewed_and_describable_tokens(protocol):
    broker = _broker(authorizer=DenyAuthorizer())
    alices = _create(broker, protocol).token_id
    carols = _create(broker, protocol, renewers=(), principal="User:carol").token_id

    def ids(answer):
        assert int(answer.error_code) == 0
        return sorted(t.token_id for t in answer.tokens)
    assert ids(_describe(broker, protocol)) == [alices]
    assert ids(_describe(broker, protocol, principal="User:bob")) == [alices]   # a renewer
    assert ids(_describe(broker, protocol, principal="User:carol")) == [carols]
    assert ids(_describe(broker, protocol, owners=[])) == []
    assert ids(_describe(broker, protocol, owners=["User:carol"])) == []
    # with Describe on the tokens (no authorizer) every token shows, filtered by owner
    open_broker = broker
    open_broker.security.authorizer = None
    assert ids(_describe(open_broker, protocol, principal="User:dave")) == sorted(
        [alices, carols])
    assert ids(_describe(open_broker, protocol, owners=["User:carol"])) == [carols]
    [token] = _describe(open_broker, protocol, owners=["User:alice"]).tokens
    assert (token.principal_type, token.principal_name, bytes(token.hmac)) == (
        "User", "alice", create_hmac(alices, KEY))
    assert [(r.principal_type, r.principal_name) for r in token.renewers] == [("User", "bob")]


@pytest.mark.parametrize("api_key", [38, 39, 40, 41])
def test_a_malformed_kafka_request_closes_the_connection(api_key):
    connection, transport = connect(ApiDispatcher(_broker()))
    payload = struct.pack(">hhih", api_key, 1, 7, 4) + b"test" + b"\x00\x00\x00\x05"
    connection.dataReceived(encode_frame(payload))
    assert read_frames(transport) == []
    assert transport.disconnecting


@pytest.mark.parametrize("api_key", [38, 39, 40, 41])
def test_a_malformed_native_request_is_answered_with_an_error(api_key):
    connection, transport = connect(ApiDispatcher(_broker()))
    connection.dataReceived(encode_frame(encode_request_payload(
        api_key, 0, 7, "test", {"not": "a request"})))
    [(correlation_id, answer)] = read_native_responses(transport, [api_key])
    assert correlation_id == 7 and isinstance(answer, m.RequestErrorResponse)
