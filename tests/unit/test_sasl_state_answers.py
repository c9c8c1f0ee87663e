"""A SaslHandshake or SaslAuthenticate where no SASL exchange can happen (a listener without SASL,
or after the exchange completed) is answered ILLEGAL_SASL_STATE and the connection stays open, as
Kafka 2.8's KafkaApis.handleSaslHandshakeRequest / handleSaslAuthenticateRequest do. Found by the
protocol fuzz (tests/system/test_protocol_fuzz.py): kafkalite closed the connection after the
answer, so a request pipelined behind it went unanswered."""

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.server.connection_security import ConnectionSecurity


def test_plaintext_sasl_requests_are_answered_without_closing():
    security = ConnectionSecurity.plaintext()
    handshake = security.handshake(m.SaslHandshakeRequest(mechanism="PLAIN"))
    assert handshake.error_code == errors.IllegalSaslStateError.code
    assert not security.close_after_answer
    authenticate = security.authenticate(m.SaslAuthenticateRequest(auth_bytes=b"\x00a\x00b"))
    assert authenticate.error_code == errors.IllegalSaslStateError.code
    assert "after successful authentication" in authenticate.error_message
    assert not security.close_after_answer
    assert security.principal == "User:ANONYMOUS"
