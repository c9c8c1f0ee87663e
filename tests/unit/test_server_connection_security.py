"""A SASL listener's connection, driven through a StringTransport (no sockets): the SASL
exchange on both protocols, what is refused before it completes, the principal it leaves, the
frame limit before authentication, and librdkafka's SCRAM nonce."""

import base64
import hashlib
import hmac
import struct

import msgpack
from pipeline_driver import Script, connect, kafka_frame, native_frame, read_frames, table_of

from kafkalite.protocol import messages as m
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.kafka import codec
from kafkalite.protocol.kafka.convert import cluster as cluster_convert
from kafkalite.protocol.kafka.convert import metadata as metadata_convert
from kafkalite.security.sasl_client import sasl_client
from kafkalite.security.sasl_server import ScramServer
from kafkalite.security.scram import make_credential
from kafkalite.security.settings import ListenerSecurity
from kafkalite.server import api_table
from kafkalite.server.api_table import ApiSpec
from kafkalite.server.connection_security import ConnectionSecurity
from kafkalite.server.dispatch import ApiDispatcher

CREDENTIAL = make_credential("SCRAM-SHA-256", "alice-secret")
LISTENER = ListenerSecurity("SASL_PLAINTEXT", "SASL_PLAINTEXT", None,
                            ("PLAIN", "SCRAM-SHA-256"), {"bob": "bob-secret"})


def pipeline():
    """A SASL listener's connection over the table's real SASL rows, with scripted ApiVersions
    and Metadata rows that record whether they were reached."""
    script = Script()
    table = table_of([
        api_table.TABLE[ApiKey.SASL_HANDSHAKE],
        api_table.TABLE[ApiKey.SASL_AUTHENTICATE],
        ApiSpec(ApiKey.API_VERSIONS, 3, script.handler(lambda ctx, r: m.ApiVersionsResponse()),
                cluster_convert.API_VERSIONS),
        ApiSpec(ApiKey.METADATA, 11, script.handler(lambda ctx, r: m.MetadataResponse()),
                metadata_convert.METADATA),
    ])
    security = ConnectionSecurity(LISTENER, lambda mech, user: CREDENTIAL
                                  if (mech, user) == ("SCRAM-SHA-256", "alice") else None)
    protocol, transport = connect(ApiDispatcher(None, table=table), security,
                                  max_frame_bytes=10_000_000)
    return protocol, transport, script


def kafka(protocol, transport, api_key, version, values, correlation_id=7):
    protocol.dataReceived(kafka_frame(api_key, version, correlation_id, values))
    return [codec.decode_response(api_key, version, f)[1] for f in read_frames(transport)]


def test_kafka_protocol_scram_exchange_names_the_principal():
    protocol, transport, script = pipeline()
    (hs,) = kafka(protocol, transport, 17, 1, {"mechanism": "SCRAM-SHA-256"})
    assert hs.error_code == 0 and list(hs.mechanisms) == ["PLAIN", "SCRAM-SHA-256"]
    client = sasl_client("SCRAM-SHA-256", "alice", "alice-secret")
    token = client.first()
    while token is not None:
        (answer,) = kafka(protocol, transport, 36, 2, {"auth_bytes": token})
        assert answer.error_code == 0
        token = client.evaluate(bytes(answer.auth_bytes))
    assert protocol.principal == "User:alice"
    kafka(protocol, transport, 18, 3, {"client_software_name": "t",
                                       "client_software_version": "1"})
    assert script.keys_called() == [ApiKey.API_VERSIONS] and not transport.disconnecting


def test_requests_before_authentication_close_the_connection():
    protocol, transport, script = pipeline()
    kafka(protocol, transport, 3, 9, {"topics": None, "allow_auto_topic_creation": False,
                                      "include_cluster_authorized_operations": False,
                                      "include_topic_authorized_operations": False})
    assert transport.disconnecting and script.calls == [] and transport.value() == b""


def test_native_requests_before_authentication_close_the_connection():
    protocol, transport, script = pipeline()
    protocol.dataReceived(native_frame(m.MetadataRequest(topics=["t"]), 1))
    assert transport.disconnecting and script.calls == [] and transport.value() == b""


def test_api_versions_is_served_before_authentication():
    protocol, transport, script = pipeline()
    (versions,) = kafka(protocol, transport, 18, 3, {"client_software_name": "t",
                                                     "client_software_version": "1"})
    assert versions.error_code == 0 and not transport.disconnecting
    assert script.calls[0].ctx.principal == "User:ANONYMOUS"


def test_a_wrong_password_answers_once_then_closes():
    protocol, transport, _ = pipeline()
    kafka(protocol, transport, 17, 1, {"mechanism": "PLAIN"})
    (answer,) = kafka(protocol, transport, 36, 2, {"auth_bytes": b"\x00bob\x00nope"})
    assert answer.error_code == 58 and "Invalid username or password" in answer.error_message
    assert transport.disconnecting and protocol.principal == "User:ANONYMOUS"


def test_an_unknown_mechanism_is_refused_with_the_enabled_ones():
    protocol, transport, _ = pipeline()
    (hs,) = kafka(protocol, transport, 17, 1, {"mechanism": "GSSAPI"})
    assert hs.error_code == 33 and "PLAIN" in hs.mechanisms
    assert transport.disconnecting


def test_native_protocol_plain_exchange():
    protocol, transport, script = pipeline()

    def native(request, correlation_id):
        protocol.dataReceived(native_frame(request, correlation_id))
        return [msgpack.unpackb(f, raw=False) for f in read_frames(transport)]
    (hs,) = native(m.SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert hs[1]["error_code"] == 0
    (auth,) = native(m.SaslAuthenticateRequest(auth_bytes=b"\x00bob\x00bob-secret"), 2)
    assert auth[1]["error_code"] == 0 and protocol.principal == "User:bob"
    native(m.ApiVersionsRequest(), 3)
    assert script.keys_called() == [ApiKey.API_VERSIONS]
    assert script.calls[0].ctx.principal == "User:bob"


def test_frames_before_authentication_are_capped():
    protocol, transport, _ = pipeline()
    protocol.dataReceived(struct.pack(">i", 600_000))      # Kafka's 512 KiB SASL limit
    assert transport.disconnecting


def test_librdkafkas_client_final_nonce_is_accepted():
    # librdkafka sends its nonce in front of the server's whole nonce in client-final; the
    # proof below is RFC 5802's, computed over that message as librdkafka computes it
    server = ScramServer("SCRAM-SHA-256", {"alice": CREDENTIAL}.get)
    first_bare = "n=alice,r=clientnonce"
    server_first = server.evaluate(f"n,,{first_bare}".encode()).decode()
    full = dict(item.split("=", 1) for item in server_first.split(","))["r"]
    without_proof = f"c=biws,r=clientnonce{full}"
    salted = hashlib.pbkdf2_hmac("sha256", b"alice-secret", CREDENTIAL.salt, 4096)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message, "sha256").digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
    assert server.evaluate(f"{without_proof},p={proof}".encode()).startswith(b"v=")
    assert server.complete and server.authorization_id == "alice"
    wrong = ScramServer("SCRAM-SHA-256", {"alice": CREDENTIAL}.get)
    wrong.evaluate(f"n,,{first_bare}".encode())
    try:
        wrong.evaluate(f"c=biws,r=elsewhere{full},p={proof}".encode())
    except Exception:  # noqa: BLE001 - any refusal
        pass
    assert not wrong.complete          # the proof does not cover this message: refused
