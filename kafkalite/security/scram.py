"""SCRAM credentials in Kafka's format, made and checked with ``scramp`` (pure).

A user's credential per mechanism is what ZooKeeper keeps in ``/config/users/<user>``, never the
password: ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`` (Kafka's
ScramCredentialUtils), under the mechanism's name (``SCRAM-SHA-512``) in the user's config.

``kafkalite configs --alter --entity-type users --add-config 'SCRAM-SHA-512=[password=s]'`` takes
Kafka's syntax: ``[password=...]`` or ``[iterations=8192,password=...]``; the iterations default to
4096, the least Kafka accepts.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass

from scramp import ScramMechanism

__all__ = ["SCRAM_MECHANISMS", "MIN_ITERATIONS", "MAX_ITERATIONS", "MECHANISM_TYPES",
           "ScramCredential", "make_credential", "credential_from_salted_password",
           "credential_to_string", "credential_from_string", "credential_from_config_value",
           "is_scram"]

SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
MIN_ITERATIONS = 4096            # Kafka's minimum for both mechanisms
MAX_ITERATIONS = 16384           # and its maximum
#: Kafka's ScramMechanism type bytes (KIP-554's requests and answers carry these; 0 is UNKNOWN)
MECHANISM_TYPES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}


def is_scram(mechanism: str) -> bool:
    return mechanism in SCRAM_MECHANISMS


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def auth_info(self) -> tuple[bytes, bytes, bytes, int]:
        """What scramp's server asks its auth function for."""
        return self.salt, self.stored_key, self.server_key, self.iterations


def _check_mechanism(mechanism: str) -> None:
    if mechanism not in SCRAM_MECHANISMS:
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r}; one of "
                         f"{', '.join(SCRAM_MECHANISMS)}")


def make_credential(mechanism: str, password: str, iterations: int = MIN_ITERATIONS,
                    salt: bytes | None = None) -> ScramCredential:
    """A new credential for ``password`` (a random salt unless one is given)."""
    _check_mechanism(mechanism)
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations={iterations} for {mechanism}: Kafka accepts "
                         f"{MIN_ITERATIONS}..{MAX_ITERATIONS}")
    if not password:
        raise ValueError(f"{mechanism}: the password is empty")
    salt_, stored, server, count = ScramMechanism(mechanism).make_auth_info(
        password, iteration_count=iterations, salt=salt)
    return ScramCredential(salt_, stored, server, count)


def credential_from_salted_password(mechanism: str, salt: bytes, salted_password: bytes,
                                    iterations: int) -> ScramCredential:
    """The credential of a password the client already salted (AlterUserScramCredentials sends
    Hi(password, salt, iterations), never the password): RFC 5802's keys, as Kafka's
    ScramFormatter.generateCredential. scramp has no public call for this step, so it is done
    here with the same hash scramp uses for the mechanism."""
    _check_mechanism(mechanism)
    digest = _HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    return ScramCredential(bytes(salt), digest(client_key).digest(), server_key, iterations)


def credential_to_string(credential: ScramCredential) -> str:
    b64 = lambda data: base64.b64encode(data).decode("ascii")  # noqa: E731
    return (f"salt={b64(credential.salt)},stored_key={b64(credential.stored_key)},"
            f"server_key={b64(credential.server_key)},iterations={credential.iterations}")


def credential_from_string(text: str) -> ScramCredential:
    """The credential in ``text``; ValueError when it is not Kafka's four fields."""
    fields: dict[str, str] = {}
    for token in text.split(","):
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise ValueError(f"SCRAM credential not valid: {text!r}")
        fields[key] = value
    if sorted(fields) != ["iterations", "salt", "server_key", "stored_key"]:
        raise ValueError(f"SCRAM credential not valid: {text!r} (expected salt, stored_key, "
                         "server_key, iterations)")
    try:
        return ScramCredential(base64.b64decode(fields["salt"], validate=True),
                               base64.b64decode(fields["stored_key"], validate=True),
                               base64.b64decode(fields["server_key"], validate=True),
                               int(fields["iterations"]))
    except (binascii.Error, ValueError):
        raise ValueError(f"SCRAM credential not valid: {text!r}") from None


def credential_from_config_value(mechanism: str, value: str) -> ScramCredential:
    """kafka-configs' ``[iterations=8192,password=secret]`` (brackets optional) -> credential."""
    _check_mechanism(mechanism)
    body = value.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    options: dict[str, str] = {}
    for token in filter(None, (t.strip() for t in body.split(","))):
        key, eq, item = token.partition("=")
        if not eq or key not in ("iterations", "password"):
            raise ValueError(f"{mechanism}={value}: expected [iterations=N,password=P] or "
                             "[password=P] (as kafka-configs, a password cannot hold a comma)")
        options[key] = item
    if "password" not in options:
        raise ValueError(f"{mechanism}={value}: a password is needed, e.g. "
                         f"'{mechanism}=[password=alice-secret]'")
    try:
        iterations = int(options.get("iterations", MIN_ITERATIONS))
    except ValueError:
        raise ValueError(f"{mechanism}: iterations must be a number") from None
    return make_credential(mechanism, options["password"], iterations)
