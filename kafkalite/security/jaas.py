"""``sasl.jaas.config`` values, read as Kafka reads them (pure).

A broker's listener is configured as in Kafka::

    listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";
    listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
        username="admin" password="admin-secret";

``username``/``password`` are the broker's own identity when it connects to other brokers
(inter-broker SASL); ``user_<name>="<password>"`` entries are PLAIN's users (Kafka's
PlainLoginModule keeps them there). SCRAM users live in ZooKeeper (``/config/users``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["JaasEntry", "parse_jaas_config", "JaasError"]

_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^\s=;"]+)|(=)|(;))', re.S)


class JaasError(ValueError):
    """A sasl.jaas.config value that is not ``<LoginModule> <flag> key="value" ... ;``."""


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def username(self) -> str | None:
        return self.options.get("username")

    @property
    def password(self) -> str | None:
        return self.options.get("password")

    def plain_users(self) -> dict[str, str]:
        """PlainLoginModule's ``user_<name>="<password>"`` entries."""
        return {key[len("user_"):]: value for key, value in self.options.items()
                if key.startswith("user_") and len(key) > len("user_")}


def _tokens(text: str):
    pos = 0
    while pos < len(text):
        if not text[pos:].strip():
            return
        match = _TOKEN.match(text, pos)
        if match is None:
            raise JaasError(f"cannot read sasl.jaas.config near {text[pos:pos + 20]!r}")
        pos = match.end()
        quoted, word, equals, semicolon = match.groups()
        if quoted is not None:
            yield "value", re.sub(r"\\(.)", r"\1", quoted)
        elif word is not None:
            yield "word", word
        elif equals is not None:
            yield "=", "="
        else:
            yield ";", ";"


def parse_jaas_config(text: str) -> list[JaasEntry]:
    """Every login module entry of a JAAS config value (Kafka requires exactly one in
    sasl.jaas.config; the caller checks)."""
    tokens = list(_tokens(text))
    entries, i = [], 0
    while i < len(tokens):
        if tokens[i][0] != "word":
            raise JaasError("sasl.jaas.config must start with a login module class name, e.g. "
                            "org.apache.kafka.common.security.plain.PlainLoginModule")
        module = tokens[i][1]
        if i + 1 >= len(tokens) or tokens[i + 1][1] not in _FLAGS:
            raise JaasError(f"sasl.jaas.config: {module} needs a control flag "
                            f"({', '.join(_FLAGS)}), e.g. '{module} required ...;'")
        flag = tokens[i + 1][1]
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] != ";":
            if (i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "="
                    or tokens[i + 2][0] not in ("value", "word")):
                raise JaasError(f"sasl.jaas.config: expected key=\"value\" options after "
                                f"{module} {flag}")
            options[tokens[i][1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise JaasError("sasl.jaas.config must end with ';'")
        i += 1
        entries.append(JaasEntry(module, flag, options))
    if not entries:
        raise JaasError("sasl.jaas.config is empty")
    return entries
