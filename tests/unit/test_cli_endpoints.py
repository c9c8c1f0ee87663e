"""How the Kafka-tool subcommands pick brokers and ZooKeeper from --bootstrap-server, --zookeeper
and the environment (``kafkalite.cli.options.Endpoints``), and the errors that name the fix."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from kafkalite import errors
from kafkalite.cli.options import (
    CliError,
    Endpoints,
    bootstrap_option,
    connection_hint,
    zookeeper_option,
)
from kafkalite.client.zk_bootstrap import ZooKeeperBootstrap

BS = "10.0.0.1:9092"
ZK = "10.0.0.2:2181/c"
ENV_BS = "10.0.0.3:9092"
ENV_ZK = "10.0.0.4:2181/e"


def resolve(args, env=None):
    seen = {}

    @click.command()
    @bootstrap_option
    @zookeeper_option
    @click.pass_context
    def cmd(ctx, bootstrap_server, zookeeper):
        endpoints = Endpoints(ctx, bootstrap_server, zookeeper)
        brokers = endpoints.brokers
        seen["brokers"] = brokers.zookeeper if isinstance(brokers, ZooKeeperBootstrap) \
            else brokers
        seen["from_zk"] = isinstance(brokers, ZooKeeperBootstrap)
        seen["zookeeper"] = endpoints.zookeeper
        seen["defaulted"] = endpoints.defaulted
        try:
            seen["required"] = endpoints.require_zookeeper("groups --list", "why")
        except CliError as exc:
            seen["required"] = exc
        endpoints.close()

    full_env = {"KAFKALITE_BOOTSTRAP_SERVER": None, "KAFKALITE_ZOOKEEPER": None}
    full_env.update(env or {})
    result = CliRunner().invoke(cmd, args, env=full_env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return seen


def test_bootstrap_server_alone_never_uses_the_default_zookeeper():
    got = resolve(["--bootstrap-server", BS])
    assert (got["brokers"], got["from_zk"], got["zookeeper"], got["defaulted"]) == \
        (BS, False, None, False)
    exc = got["required"]
    assert isinstance(exc, CliError) and exc.exit_code == 2
    assert exc.format_message().startswith("groups --list needs ZooKeeper, which "
                                           "--bootstrap-server alone cannot reach (why): pass "
                                           "--zookeeper HOST:PORT/chroot")


def test_bootstrap_server_flag_keeps_an_environment_zookeeper_for_zookeeper_only_work():
    got = resolve(["--bootstrap-server", BS], {"KAFKALITE_ZOOKEEPER": ENV_ZK})
    assert (got["brokers"], got["zookeeper"], got["required"]) == (BS, None, ENV_ZK)


def test_zookeeper_flag_alone_finds_the_brokers_there():
    got = resolve(["--zookeeper", ZK])
    assert (got["brokers"], got["from_zk"], got["zookeeper"], got["required"]) == \
        (ZK, True, ZK, ZK)


def test_environment_alone():
    got = resolve([], {"KAFKALITE_ZOOKEEPER": ENV_ZK})
    assert (got["brokers"], got["from_zk"], got["zookeeper"]) == (ENV_ZK, True, ENV_ZK)
    got = resolve([], {"KAFKALITE_BOOTSTRAP_SERVER": ENV_BS})
    assert (got["brokers"], got["zookeeper"], got["defaulted"]) == (ENV_BS, None, False)
    assert isinstance(got["required"], CliError)
    got = resolve([], {"KAFKALITE_BOOTSTRAP_SERVER": ENV_BS, "KAFKALITE_ZOOKEEPER": ENV_ZK})
    assert (got["brokers"], got["zookeeper"], got["required"]) == (ENV_BS, ENV_ZK, ENV_ZK)


def test_zookeeper_flag_with_environment_bootstrap():
    got = resolve(["--zookeeper", ZK], {"KAFKALITE_BOOTSTRAP_SERVER": ENV_BS})
    assert (got["brokers"], got["from_zk"], got["zookeeper"]) == (ENV_BS, False, ZK)


def test_neither_flag_uses_the_defaults():
    got = resolve([])
    assert (got["brokers"], got["zookeeper"], got["defaulted"], got["required"]) == \
        ("127.0.0.1:9092", None, True, "127.0.0.1:2181/kafkalite")


@pytest.mark.parametrize("defaulted", [False, True])
def test_hints_name_the_flags_and_the_address(defaulted):
    msg = connection_hint(errors.NoBrokersAvailableError("x"), "127.0.0.1:9092",
                          defaulted=defaulted)
    assert "127.0.0.1:9092" in msg and "--bootstrap-server HOST:PORT" in msg
    assert ("--zookeeper HOST:PORT/chroot" in msg) is defaulted
    zk_error = errors.ZooKeeperError("cannot reach ZooKeeper at 127.0.0.1:2181 within 10 s")
    msg = connection_hint(zk_error, None, "127.0.0.1:2181/kafkalite", defaulted)
    assert msg.startswith("cannot reach ZooKeeper at 127.0.0.1:2181")
    assert "--zookeeper HOST:PORT/chroot" in msg and "--bootstrap-server HOST:PORT" in msg
    msg = connection_hint(zk_error, None, "127.0.0.1:2181/kafkalite", defaulted,
                          zookeeper_for="groups --list")
    assert "groups --list needs ZooKeeper" in msg and "--zookeeper HOST:PORT/chroot" in msg
    assert ("--bootstrap-server" in msg) is defaulted     # named only as the default's cause


# --- reassign --verify: moves in progress from the admin client (brokers or ZooKeeper) ---------


class _StubAdmin:
    def __init__(self, replicas, isr, moving):
        from kafkalite.client.structs import PartitionDescription, TopicDescription

        self.desc = TopicDescription("t", [PartitionDescription(0, replicas[0], replicas, isr,
                                                                [])])
        self.moving = moving

    def describe_topics(self, names):
        return [self.desc]

    def list_partition_reassignments(self):
        from kafkalite.client.structs import TopicPartition

        return {TopicPartition("t", 0): [2]} if self.moving else {}


@pytest.mark.parametrize("replicas, isr, moving, status", [
    ([2, 1], [2, 1], True, "is still in progress."),          # target first, then the leaving
    ([2], [2], False, "is completed."),
    ([2, 3], [2], False, "is still in progress (replicas 3 not in the ISR yet)."),
    ([1, 2], [1, 2], False, "failed: its replicas are 1,2, not 2."),
])
def test_verify(capsys, replicas, isr, moving, status):
    from kafkalite.cli.reassign import _verify

    target = [2, 3] if replicas == [2, 3] else [2]
    _verify(_StubAdmin(replicas, isr, moving), {("t", 0): target})
    assert capsys.readouterr().out.splitlines() == [
        "Status of partition reassignment:", f"Reassignment of partition t-0 {status}"]
