"""Find the brokers through ZooKeeper (``/brokers/ids``), as Kafka 0.8's consumers did.

A consumer given ``zookeeper="host:port/chroot"`` and no ``bootstrap_servers`` asks ZooKeeper which
brokers are registered and bootstraps from their advertised addresses.
"""

from __future__ import annotations

from kafkalite import errors


class ZooKeeperBootstrap:
    def __init__(self, zookeeper: str, listener: str | None = None, zk_client=None):
        self.zookeeper = zookeeper
        self.listener = listener
        self._zk = zk_client

    def _client(self):
        if self._zk is None:
            from kafkalite.zk import ZkClient

            self._zk = ZkClient(self.zookeeper, session_timeout_ms=10000,
                                connection_timeout_s=10).start()
        elif not self._zk.connected:
            self._zk.start()
        return self._zk

    def addresses(self) -> list[tuple[str, int]]:
        registrations = self._client().get_brokers()
        out = []
        for broker_id in sorted(registrations):
            registration = registrations[broker_id]
            endpoint = registration.endpoint(self.listener) if self.listener else None
            out.append(endpoint or (registration.host, registration.port))
        if not out:
            raise errors.NoBrokersAvailableError(
                f"no broker is registered under /brokers/ids in ZooKeeper {self.zookeeper}; "
                "is the cluster up, and is the chroot right?")
        return out

    def describe(self) -> str:
        return f"zookeeper:{self.zookeeper}"

    def close(self) -> None:
        if self._zk is not None:
            self._zk.stop()
            self._zk = None
