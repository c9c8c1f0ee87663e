"""``--command-config FILE``: a Kafka client properties file (what kafka-acls, kafka-configs and
friends take) as kafkalite client keyword arguments, so the same file works for both::

    security.protocol=SASL_SSL
    sasl.mechanism=SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
        username="admin" password="admin-secret";
    ssl.truststore.location=/path/ca.pem          # PEM (kafkalite reads no JKS)
    zookeeper.auth.digest=kafka:zk-secret          # kafkalite's: the ZooKeeper identity

librdkafka's spellings are taken too (``sasl.username``, ``sasl.password``,
``ssl.ca.location``, ``ssl.certificate.location``, ``ssl.key.location``).

``KAFKALITE_COMMAND_CONFIG=FILE`` in the environment gives every subcommand that talks to brokers
(topics, produce, consume, groups, configs, acls ...) the same settings, as Kafka's
``--command-config`` / ``--producer.config`` / ``--consumer.config`` do one tool at a time.
"""

from __future__ import annotations

import click

from kafkalite.cli.errors import CliError

__all__ = ["command_config_option", "security_from_properties", "load_command_config",
           "environment_security", "COMMAND_CONFIG_ENV"]

COMMAND_CONFIG_ENV = "KAFKALITE_COMMAND_CONFIG"

command_config_option = click.option(
    "--command-config", "command_config", envvar=COMMAND_CONFIG_ENV,
    type=click.Path(exists=True, dir_okay=False),
    help="client properties file: security.protocol, sasl.mechanism, sasl.jaas.config, "
         "ssl.truststore.location, zookeeper.auth.digest (env KAFKALITE_COMMAND_CONFIG)")

_SIMPLE = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism", "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username", "sasl.password": "sasl_plain_password",
    "ssl.truststore.location": "ssl_cafile", "ssl.ca.location": "ssl_cafile",
    "ssl.keystore.location": "ssl_certfile", "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile", "ssl.key.password": "ssl_password",
}
_IGNORED = ("ssl.truststore.type", "ssl.keystore.type", "client.id", "request.timeout.ms")


def security_from_properties(props: dict[str, str]) -> tuple[dict, str | None]:
    """(AdminClient/Producer/Consumer keyword arguments, ZooKeeper digest identity or None)."""
    from kafkalite.security.jaas import JaasError, parse_jaas_config

    kwargs: dict = {}
    digest = None
    for key, value in props.items():
        if key in _SIMPLE:
            kwargs[_SIMPLE[key]] = value
        elif key == "sasl.jaas.config":
            try:
                (entry,) = parse_jaas_config(value)
            except (JaasError, ValueError) as exc:
                raise CliError(f"sasl.jaas.config in the command config: {exc}",
                               exit_code=2) from None
            kwargs["sasl_plain_username"] = entry.username
            kwargs["sasl_plain_password"] = entry.password
        elif key == "ssl.endpoint.identification.algorithm":
            kwargs["ssl_check_hostname"] = value.strip().lower() == "https"
        elif key == "zookeeper.auth.digest":
            digest = value
        elif key not in _IGNORED:
            raise CliError(f"{key} in the command config is not a setting kafkalite's clients "
                           f"take; known: {', '.join(sorted(_SIMPLE))}, sasl.jaas.config, "
                           "ssl.endpoint.identification.algorithm, zookeeper.auth.digest",
                           exit_code=2)
    return kwargs, digest


def load_command_config(path: str | None) -> tuple[dict, str | None]:
    if not path:
        return {}, None
    from kafkalite.config import read_properties
    from kafkalite.errors import ConfigError

    try:
        return security_from_properties(read_properties(path))
    except ConfigError as exc:
        raise CliError(str(exc), exit_code=2) from None


def environment_security() -> dict:
    """Client keyword arguments from ``KAFKALITE_COMMAND_CONFIG`` ({} when it is unset); its
    zookeeper.auth.digest becomes the ZooKeeper identity of this process's ZooKeeper clients."""
    import os

    from kafkalite.zk.znode_acls import DIGEST_ENV

    kwargs, digest = load_command_config(os.environ.get(COMMAND_CONFIG_ENV))
    if digest and not os.environ.get(DIGEST_ENV):
        os.environ[DIGEST_ENV] = digest
    return kwargs
