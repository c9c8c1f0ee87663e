"""``kafkalite cluster up --security sasl_ssl``: the local cluster with Kafka's security on.

What it sets up, in ``<data-dir>/security/``:

* a CA (``ca.pem``) and one certificate for the brokers (``broker.pem``: key and chain), valid
  for 127.0.0.1 and localhost;
* an ``admin`` user with a random password, its SCRAM-SHA-512 and -256 credentials written to
  ZooKeeper's ``/config/users/admin`` before any broker starts, and ``admin.properties`` (client
  properties for ``--command-config``) with the password;
* brokers whose client ports (``--base-port`` and up) are SASL_SSL with SCRAM-SHA-512/256, the
  ACL authorizer on, ``admin`` the only super user, and brokers talking to each other over
  SASL_SSL as admin. Each broker also listens on a loopback PLAINTEXT port (``LOCAL``) for the
  launcher's readiness probes: unauthenticated there, it may do nothing but ask for the broker
  list.

``client_settings`` prints what kcat, confluent-kafka and kafkalite's own tools need.

The compose file's ``secure`` profile runs the same preparation in a one-shot container::

    python -m kafkalite.cli.cluster_security DIR ZOOKEEPER HOST[,HOST...]

(certificates for those host names in DIR, the admin user in ZOOKEEPER with the password in
KAFKALITE_ADMIN_PASSWORD; existing certificates are kept, so a restart changes nothing).
"""

from __future__ import annotations

import os
import secrets
import sys
from dataclasses import dataclass

__all__ = ["SECURITY_CHOICES", "SecureSetup", "secure_local_cluster", "client_settings"]

SECURITY_CHOICES = ("plaintext", "sasl_ssl")
MECHANISM = "SCRAM-SHA-512"


@dataclass(frozen=True)
class SecureSetup:
    directory: str
    ca_path: str
    admin_password: str
    admin_properties: str
    bootstrap: str


def _jaas(password: str) -> str:
    return ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            f'username="admin" password="{password}";')


def make_certificates(directory: str, hosts=("127.0.0.1", "localhost")) -> tuple[str, str]:
    """(CA certificate path, broker keystore path) in ``directory``; kept when already there."""
    from kafkalite.security.certificates import make_ca, make_certificate

    ca_path, keystore = os.path.join(directory, "ca.pem"), os.path.join(directory, "broker.pem")
    if not (os.path.exists(ca_path) and os.path.exists(keystore)):
        ca = make_ca(directory, common_name="kafkalite cluster CA")
        make_certificate(ca, directory, "broker", tuple(hosts))
    return ca_path, keystore


def write_admin(zookeeper: str, password: str) -> None:
    """The admin user's SCRAM credentials in ZooKeeper (before any broker needs them)."""
    from kafkalite.security.scram import credential_to_string, make_credential
    from kafkalite.zk.credentials import UserConfigZkStore
    from kafkalite.zk.znode_acls import secure_zk_client

    zk = secure_zk_client(zookeeper, session_timeout_ms=10000).start()
    try:
        UserConfigZkStore(zk).alter("admin", {
            m: credential_to_string(make_credential(m, password))
            for m in ("SCRAM-SHA-256", MECHANISM)})
    finally:
        zk.stop()


def write_admin_properties(directory: str, password: str, ca_path: str) -> str:
    path = os.path.join(directory, "admin.properties")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(f"security.protocol=SASL_SSL\nsasl.mechanism={MECHANISM}\n"
                f"sasl.jaas.config={_jaas(password)}\nssl.truststore.location={ca_path}\n")
    return path


def secure_local_cluster(cluster, data_dir: str, zookeeper: str) -> SecureSetup:
    """Make certificates and the admin user, and turn ``cluster`` (a LocalCluster not yet
    spawned) into a SASL_SSL one: each broker's configured port becomes its SASL_SSL listener and
    a free loopback port its PLAINTEXT probe listener (what LocalCluster waits on)."""
    from kafkalite.local.ports import free_port

    directory = os.path.join(data_dir, "security")
    os.makedirs(directory, exist_ok=True)
    ca_path, keystore = make_certificates(directory)
    password_file = os.path.join(directory, "admin.password")
    if os.path.exists(password_file):          # a restart keeps the admin's password
        with open(password_file) as f:
            password = f.read().strip()
    else:
        password = secrets.token_urlsafe(18)
        with open(os.open(password_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(password + "\n")
    write_admin(zookeeper, password)
    secure_ports = []
    for broker in cluster.brokers.values():
        secure_port = broker.port
        broker.port = free_port()
        secure_ports.append(secure_port)
        broker.overrides.update({
            "listeners": f"SASL_SSL://127.0.0.1:{secure_port},LOCAL://127.0.0.1:{broker.port}",
            "advertised.listeners": f"SASL_SSL://127.0.0.1:{secure_port},"
                                    f"LOCAL://127.0.0.1:{broker.port}",
            "listener.security.protocol.map": "SASL_SSL:SASL_SSL,LOCAL:PLAINTEXT",
            "security.inter.broker.protocol": "SASL_SSL",
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            "sasl.enabled.mechanisms": f"{MECHANISM},SCRAM-SHA-256",
            f"listener.name.sasl_ssl.{MECHANISM.lower()}.sasl.jaas.config": _jaas(password),
            "ssl.keystore.type": "PEM",          # Kafka's default is JKS; kafkalite reads PEM
            "ssl.keystore.location": keystore,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": ca_path,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:admin",
        })
    bootstrap = ",".join(f"127.0.0.1:{port}" for port in secure_ports)
    properties = write_admin_properties(directory, password, ca_path)
    return SecureSetup(directory, ca_path, password, properties, bootstrap)


def client_settings(setup: SecureSetup) -> str:
    """The lines ``cluster up`` prints: how each kind of client connects."""
    p = setup.admin_password
    return "\n".join([
        f"security    SASL_SSL with {MECHANISM}; user admin (a super user), password {p}",
        f"            CA {setup.ca_path}; client properties {setup.admin_properties}",
        f"kcat        kcat -b {setup.bootstrap} -X security.protocol=SASL_SSL "
        f"-X sasl.mechanisms={MECHANISM} -X sasl.username=admin -X sasl.password={p} "
        f"-X ssl.ca.location={setup.ca_path} -L",
        f"confluent   {{'bootstrap.servers': '{setup.bootstrap}', 'security.protocol': "
        f"'SASL_SSL', 'sasl.mechanisms': '{MECHANISM}', 'sasl.username': 'admin', "
        f"'sasl.password': '{p}', 'ssl.ca.location': '{setup.ca_path}'}}",
        f"kafkalite   kafkalite acls --bootstrap-server {setup.bootstrap} --command-config "
        f"{setup.admin_properties} --list",
    ])


def main(argv: list[str]) -> int:
    """The compose file's one-shot setup: certificates, the admin user, admin.properties."""
    if len(argv) != 3:
        print("usage: python -m kafkalite.cli.cluster_security DIR ZOOKEEPER HOST[,HOST...]",
              file=sys.stderr)
        return 2
    directory, zookeeper, hosts = argv
    password = os.environ.get("KAFKALITE_ADMIN_PASSWORD", "")
    if not password:
        print("set KAFKALITE_ADMIN_PASSWORD: the admin user's password", file=sys.stderr)
        return 2
    os.makedirs(directory, exist_ok=True)
    ca_path, _ = make_certificates(directory, tuple(h for h in hosts.split(",") if h))
    write_admin(zookeeper, password)
    print(f"security ready in {directory}: CA {ca_path}, admin properties "
          f"{write_admin_properties(directory, password, ca_path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
