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
"""

from __future__ import annotations

import os
import secrets
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


def secure_local_cluster(cluster, data_dir: str, zookeeper: str) -> SecureSetup:
    """Make certificates and the admin user, and turn ``cluster`` (a LocalCluster not yet
    spawned) into a SASL_SSL one: each broker's configured port becomes its SASL_SSL listener and
    a free loopback port its PLAINTEXT probe listener (what LocalCluster waits on)."""
    from kafkalite.security.certificates import make_ca, make_certificate
    from kafkalite.security.scram import credential_to_string, make_credential
    from kafkalite.testing.ports import free_port
    from kafkalite.zk.credentials import UserConfigZkStore
    from kafkalite.zk.znode_acls import secure_zk_client

    directory = os.path.join(data_dir, "security")
    ca = make_ca(directory, common_name="kafkalite cluster up CA")
    keystore = make_certificate(ca, directory, "broker").keystore_path
    password_file = os.path.join(directory, "admin.password")
    if os.path.exists(password_file):          # a restart keeps the admin's password
        with open(password_file) as f:
            password = f.read().strip()
    else:
        password = secrets.token_urlsafe(18)
        with open(os.open(password_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(password + "\n")
    zk = secure_zk_client(zookeeper, session_timeout_ms=10000).start()
    try:
        UserConfigZkStore(zk).alter("admin", {
            m: credential_to_string(make_credential(m, password))
            for m in ("SCRAM-SHA-256", MECHANISM)})
    finally:
        zk.stop()
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
            "ssl.keystore.location": keystore,
            "ssl.truststore.location": ca.cert_path,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:admin",
        })
    bootstrap = ",".join(f"127.0.0.1:{port}" for port in secure_ports)
    properties = os.path.join(directory, "admin.properties")
    with open(os.open(properties, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(f"security.protocol=SASL_SSL\nsasl.mechanism={MECHANISM}\n"
                f"sasl.jaas.config={_jaas(password)}\nssl.truststore.location={ca.cert_path}\n")
    return SecureSetup(directory, ca.cert_path, password, properties, bootstrap)


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
