"""What a handler knows about the request it serves, besides the request itself.

Kafka's ``RequestContext`` (``network/RequestChannel.scala``) carries the header, the listener, the
security protocol, the principal and the client's address; kafkalite's carries the same, plus the
connection's view of the authorizer (``request_authz.RequestAuthz``), so a handler asks "may this
client do that to this resource" without knowing how the connection authenticated.

The connection pipeline (``server.network``) builds one per request, after decoding and before the
handler runs, for both protocols alike. Handlers never see the connection itself: the SASL APIs,
which change the connection's state, reach it through ``connection_security``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkalite.security.acl import ANONYMOUS
from kafkalite.server.request_authz import ALLOW_ALL, RequestAuthz

__all__ = ["RequestContext", "KAFKA", "NATIVE"]

KAFKA, NATIVE = "kafka", "native"


@dataclass(frozen=True)
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    protocol: str = KAFKA                 # which wire protocol carried the request
    listener: str | None = None           # the listener's name (PLAINTEXT, INTERNAL, ...)
    security_protocol: str = "PLAINTEXT"
    principal: str = ANONYMOUS
    client_host: str = ""                 # the client's IP address, "" when unknown
    authz: RequestAuthz = ALLOW_ALL
    #: the connection's ``ConnectionSecurity``: only the SASL handlers use it
    connection_security: Any = field(default=None, compare=False, repr=False)
    #: the request's ``quota_throttle.RequestQuota`` (None: no client quotas enforced)
    quota: Any = field(default=None, compare=False, repr=False)

    @property
    def client_address(self) -> str:
        """The client's address as Kafka shows it in group descriptions (``/10.0.0.7``)."""
        return "/" + self.client_host if self.client_host else ""
