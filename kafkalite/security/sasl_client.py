"""The client's side of SASL PLAIN and SCRAM (scramp), for kafkalite's own connections: its
clients (``kafkalite.client.connection``) and brokers talking to brokers
(``security.client_transport``). No I/O: ``first()`` gives the first token, ``evaluate(challenge)``
the next one (None once the exchange is complete on the client's side).
"""

from __future__ import annotations

from scramp import ScramClient

from kafkalite.errors import SaslAuthenticationFailedError
from kafkalite.security.scram import SCRAM_MECHANISMS

__all__ = ["SaslClient", "sasl_client"]


class SaslClient:
    mechanism: str

    def first(self) -> bytes:
        raise NotImplementedError

    def evaluate(self, challenge: bytes) -> bytes | None:
        raise NotImplementedError


class PlainClient(SaslClient):
    mechanism = "PLAIN"

    def __init__(self, username: str, password: str):
        self.username, self.password = username, password

    def first(self) -> bytes:
        return f"\x00{self.username}\x00{self.password}".encode("utf-8")

    def evaluate(self, challenge: bytes) -> bytes | None:
        return None


class ScramSaslClient(SaslClient):
    def __init__(self, mechanism: str, username: str, password: str):
        self.mechanism = mechanism
        self._client = ScramClient([mechanism], username, password)
        self._step = 0

    def first(self) -> bytes:
        self._step = 1
        return self._client.get_client_first().encode("utf-8")

    def evaluate(self, challenge: bytes) -> bytes | None:
        try:
            if self._step == 1:
                self._step = 2
                self._client.set_server_first(bytes(challenge).decode("utf-8"))
                return self._client.get_client_final().encode("utf-8")
            if self._step == 2:
                self._step = 3
                self._client.set_server_final(bytes(challenge).decode("utf-8"))
                return None
        except Exception as exc:  # noqa: BLE001 - scramp raises ScramException and others
            raise SaslAuthenticationFailedError(
                f"{self.mechanism}: the broker's answer does not verify ({exc}); is it the "
                "broker you meant?") from None
        raise SaslAuthenticationFailedError(f"{self.mechanism}: unexpected extra challenge")


def sasl_client(mechanism: str, username: str | None, password: str | None) -> SaslClient:
    if not username or password is None:
        raise ValueError(f"SASL {mechanism} needs a user name and a password "
                         "(sasl_plain_username / sasl_plain_password)")
    if mechanism == "PLAIN":
        return PlainClient(username, password)
    if mechanism in SCRAM_MECHANISMS:
        return ScramSaslClient(mechanism, username, password)
    raise ValueError(f"unsupported SASL mechanism {mechanism!r}; one of PLAIN, "
                     f"{', '.join(SCRAM_MECHANISMS)}")
