"""Security as Kafka 2.x has it: TLS listeners, SASL (PLAIN, SCRAM-SHA-256/512), principals,
and the ACL authorizer.

Pure pieces (no I/O, unit-tested alone): ``acl`` (Kafka's ACL model), ``authorizer`` (the
decisions), ``operations`` (which API checks what), ``scram`` (credentials in Kafka's format),
``principal_mapping`` (ssl.principal.mapping.rules), ``jaas`` (sasl.jaas.config),
``sasl_server`` / ``sasl_client`` (the exchanges), ``settings`` (per-listener security from
the broker config). Pieces with I/O: ``tls`` (pyOpenSSL contexts for Twisted),
``acl_authorizer`` (the cache of ACLs kept in step with ZooKeeper), ``credential_cache`` (SCRAM
credentials from ZooKeeper), ``client_transport`` (brokers connecting to brokers).
"""
