"""Serving one decoded request through the API table: the one place a handler is called.

``ApiDispatcher`` belongs to a broker. The connection pipeline (``server.network``) decodes a
request with its protocol's codec, asks ``context`` for the request's ``RequestContext`` and
``call`` for the answer. What the handlers need of the broker, they take from it; what they need
of the request's origin, from the context.
"""

from __future__ import annotations

from twisted.internet import defer

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ANONYMOUS
from kafkalite.server import api_table
from kafkalite.server.quota_throttle import EXEMPT_APIS, RequestQuota
from kafkalite.server.request_authz import ALLOW_ALL, RequestAuthz
from kafkalite.server.request_context import RequestContext

__all__ = ["ApiDispatcher"]


class ApiDispatcher:
    def __init__(self, broker, table: dict | None = None):
        self.broker = broker
        self.table = api_table.TABLE if table is None else table
        self.connections: set = set()

    # --- connection bookkeeping (for metrics and clean shutdown) ---------------------------------
    def connection_opened(self, connection) -> None:
        self.connections.add(connection)

    def connection_closed(self, connection) -> None:
        self.connections.discard(connection)

    # --- the table ------------------------------------------------------------------------------
    def spec_for(self, api_key: int) -> api_table.ApiSpec | None:
        return self.table.get(api_key)

    def kafka_ranges(self) -> dict[int, tuple[int, int]]:
        return api_table.kafka_ranges(self.table)

    def listener_may_carry(self, spec: api_table.ApiSpec, listener: str | None) -> bool:
        config = getattr(self.broker, "config", None)
        return config is None or api_table.listener_may_carry(spec, listener, config)

    def context(self, connection, protocol: str, api_key: int, api_version: int,
                correlation_id: int, client_id: str | None) -> RequestContext:
        factory = getattr(connection, "factory", None)
        listener_security = getattr(factory, "listener_security", None)
        security = getattr(connection, "security", None)
        principal = getattr(security, "principal", ANONYMOUS)
        host = getattr(connection, "peer_host", "")   # BrokerProtocol reads it once
        authorizer = getattr(getattr(self.broker, "security", None), "authorizer", None)
        authz = ALLOW_ALL if authorizer is None else RequestAuthz(authorizer, principal, host)
        return RequestContext(
            api_key=api_key, api_version=api_version, correlation_id=correlation_id,
            client_id=client_id, protocol=protocol,
            listener=getattr(factory, "listener_name", None),
            security_protocol=getattr(listener_security, "protocol", "PLAINTEXT"),
            principal=principal, client_host=host, authz=authz,
            connection_security=security,
            quota=self._request_quota(connection, api_key, principal, client_id))

    def _request_quota(self, connection, api_key: int, principal: str,
                       client_id: str | None) -> RequestQuota | None:
        quotas = getattr(self.broker, "quotas", None)
        if quotas is None or not quotas.enabled:
            return None                     # Kafka records nothing before a quota is set
        return RequestQuota(quotas, principal, client_id, self.broker.clock_ms, connection,
                            exempt=api_key in EXEMPT_APIS)

    def call(self, spec: api_table.ApiSpec, ctx: RequestContext, request):
        """The handler's answer (or a Deferred of it); exceptions propagate to the pipeline,
        which turns them into the request's error response. With client quotas, the handler is
        timed and its answer throttled (``quota_throttle``)."""
        quota = ctx.quota
        if quota is None:
            return spec.handler(self.broker, ctx, request)
        if spec.key == ApiKey.FETCH and getattr(request, "replica_id", -1) >= 0:
            quota.exempt = True             # a follower: replication quotas, not client ones
        try:
            result = spec.handler(self.broker, ctx, request)
        except Exception as exc:
            quota.handler_returned()
            quota.failed(exc)          # the error answer is throttled too, as Kafka's
            raise
        quota.handler_returned()
        if isinstance(result, defer.Deferred):
            return result.addCallbacks(quota.finish, quota.failed_later)
        return quota.finish(result)
