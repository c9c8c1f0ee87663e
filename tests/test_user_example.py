"""What a kafkalite user writes in their own project's tests (README: "Use it in your integration
tests"). Installing kafkalite registers the pytest plugin, so the fixture needs no conftest.py:
``kafkalite_docker_cluster`` is a running 3-broker cluster for the whole session, in Docker when an
engine and the images are there (testcontainers), else local processes.
"""

import uuid

from kafkalite.client import AdminClient, Consumer, NewTopic, Producer


def test_orders_round_trip(kafkalite_docker_cluster):
    bootstrap = kafkalite_docker_cluster.bootstrap_servers
    topic = f"orders-{uuid.uuid4().hex[:8]}"  # the cluster is shared: a topic of our own

    admin = AdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)])
    admin.close()

    with Producer(bootstrap_servers=bootstrap, acks="all") as producer:
        for i in range(10):
            producer.send(topic, key=f"customer-{i % 3}".encode(), value=f"order {i}".encode())
        producer.flush()

    consumer = Consumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                        enable_auto_commit=False)
    received = []
    for _ in range(30):
        for records in consumer.poll(timeout_ms=1000).values():
            received += [(r.key, r.value) for r in records]
        if len(received) >= 10:
            break
    consumer.close()

    assert sorted(value for _, value in received) == sorted(f"order {i}".encode()
                                                            for i in range(10))
    # records with the same key land in the same partition, in the order they were sent
    by_customer = {}
    for key, value in received:
        by_customer.setdefault(key, []).append(value)
    assert by_customer[b"customer-0"] == [b"order 0", b"order 3", b"order 6", b"order 9"]
