"""CreateTopics on the broker (Kafka 2.8's KafkaApis.handleCreateTopicsRequest and
ZkAdminManager.createTopics), for both protocols' request handlers.

As in Kafka 2.8 (no forwarding yet), only the active controller creates topics: any other
broker answers NOT_CONTROLLER for every topic and clients retry at the controller that Metadata
names. The controller refuses a topic named twice in the request or one the client may not
create, then checks each topic in Kafka's order, with Kafka's messages (kafka-topics prints
them): the metadata cache knows it; a null config value; counts and an assignment both given;
the replicas (the defaults for -1, Kafka's spread otherwise); the name; ZooKeeper knows it, or a
topic whose name collides once '.' and '_' are the same; the explicit assignment; the configs.
An explicit assignment may name brokers that do not exist (Kafka 2.8 allows it: those
replicas stay offline). The topic is written to ZooKeeper (``/brokers/topics/<t>`` and its
config), and the answer waits until this broker's metadata shows a leader for every partition
(REQUEST_TIMED_OUT at the request's timeout, or at once when it is 0 -- the topics are created
all the same, and clients that did not wait take that answer as success).

Each answer carries what CreateTopics v5+ does (KIP-525): the partition count, replication
factor and every config of the new topic, rendered as DescribeConfigs renders them, when the
client may DescribeConfigs the topic (otherwise topic_config_error_code); a refused topic has
-1, -1 and no configs.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from twisted.internet import defer

from kafkalite import errors
from kafkalite.controller.assignment import assign_replicas, validate_assignment
from kafkalite.errors import KafkaError, code_of
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType
from kafkalite.server.config_admin import _broker_layers, describe_topic_config
from kafkalite.topics import collides, has_collision_chars, validate_topic_name
from kafkalite.zk.errors import ZkConnectionLossError, ZkSessionExpiredError

NO_COUNT = -1       # num_partitions / replication_factor: the broker's default


class TopicOutcome(NamedTuple):
    name: str
    error_code: int
    error_message: str | None
    num_partitions: int = -1
    replication_factor: int = -1
    configs: tuple = ()                 # config_admin.DescribedConfig, for a created topic
    topic_config_error_code: int = 0


def is_active_controller(broker) -> bool:
    controller = getattr(broker, "controller", None)
    return controller is not None and controller.is_active


def create_topics(broker, topics, timeout_ms: int, validate_only: bool, authz
                  ) -> defer.Deferred:
    """Fires with one TopicOutcome per entry of ``topics`` (``messages.CreatableTopic``), in
    request order."""
    return defer.ensureDeferred(_create_topics(broker, list(topics), timeout_ms, validate_only,
                                               authz))


async def _create_topics(broker, topics, timeout_ms, validate_only, authz):
    if not is_active_controller(broker):
        # Kafka leaves the message at the field's default, "" (not null)
        return [TopicOutcome(t.name, errors.NotControllerError.code, "") for t in topics]
    counts = Counter(t.name for t in topics)
    on_cluster = authz.may(ApiKey.CREATE_TOPICS, ResourceType.CLUSTER, log_denied=False)
    outcomes: list[TopicOutcome | None] = []
    asked = []                                   # (index, topic, may describe its configs)
    for i, topic in enumerate(topics):
        describable = authz.may(ApiKey.DESCRIBE_CONFIGS, ResourceType.TOPIC, topic.name,
                                log_denied=False)
        config_error = 0 if describable else errors.TopicAuthorizationFailedError.code
        refused = None
        if counts[topic.name] > 1:
            refused = (errors.InvalidRequestError.code, "Found multiple entries for this topic.")
        elif not on_cluster and not authz.may(ApiKey.CREATE_TOPICS, ResourceType.TOPIC,
                                              topic.name):
            refused = (errors.TopicAuthorizationFailedError.code, "Authorization failed.")
        if refused:
            outcomes.append(TopicOutcome(topic.name, *refused,
                                         topic_config_error_code=config_error))
        else:
            outcomes.append(None)
            asked.append((i, topic, describable))
    created = []
    known: set[str] | None = None                # ZooKeeper's topics, read once
    for i, topic, describable in asked:
        try:
            if known is None:
                known = set((await broker.deferred_zk.list_topics()) or ())
            assignment = _check(broker, topic, known)
            overrides = dict(topic.configs)
            configs = ()
            if describable:
                layers = _broker_layers(broker)
                configs = tuple(describe_topic_config(layers.static, overrides, None,
                                                      dynamic=layers))
            if not validate_only:
                await broker.deferred_zk.create_topic(topic.name, assignment, overrides)
                created.append(topic.name)
            known.add(topic.name)
            outcomes[i] = TopicOutcome(topic.name, errors.NONE, None, len(assignment),
                                       len(assignment[0]), configs)
        except (ZkConnectionLossError, ZkSessionExpiredError) as exc:
            # the request times out (retriable) while ZooKeeper cannot be reached
            outcomes[i] = TopicOutcome(
                topic.name, errors.RequestTimedOutError.code,
                f"ZooKeeper cannot be reached ({exc.message}): topic '{topic.name}' was not "
                "created; retry once ZooKeeper has a quorum again")
        except KafkaError as exc:
            outcomes[i] = TopicOutcome(topic.name, code_of(exc), exc.message)
    if created:
        metadata = broker.metadata_cache
        if timeout_ms > 0:
            def ready():
                return all(metadata.all_leaders_known(name) for name in created)

            await broker.metadata_waits.wait(timeout_ms, ready, lambda timed_out: None)
        late = {n for n in created if timeout_ms <= 0 or not metadata.all_leaders_known(n)}
        # Kafka: created, but not (yet) with every leader: REQUEST_TIMED_OUT, no message, and
        # the answer's counts and configs reset as for any failure
        outcomes = [TopicOutcome(o.name, errors.RequestTimedOutError.code, None)
                    if o.name in late else o for o in outcomes]
    return outcomes


def _check(broker, topic, known: set[str]) -> dict[int, list[int]]:
    """The new topic's assignment, once it passed Kafka's checks (ZkAdminManager.createTopics
    and AdminZkClient.validateTopicCreate, in their order)."""
    name = topic.name
    if broker.metadata_cache.contains(name):
        raise errors.TopicAlreadyExistsError(f"Topic '{name}' already exists.")
    nulls = [k for k, v in topic.configs.items() if v is None]
    if nulls:
        raise errors.InvalidRequestError(
            f"Null value not supported for topic configs : {','.join(nulls)}")
    if topic.assignments and (topic.num_partitions != NO_COUNT
                              or topic.replication_factor != NO_COUNT):
        raise errors.InvalidRequestError(
            "Both numPartitions or replicationFactor and replicasAssignments were set. "
            "Both cannot be used at the same time.")
    if topic.assignments:
        assignment = {int(p): [int(b) for b in r] for p, r in topic.assignments.items()}
    else:
        config = broker.config
        partitions = (config.num_partitions if topic.num_partitions == NO_COUNT
                      else topic.num_partitions)
        rf = (config.default_replication_factor if topic.replication_factor == NO_COUNT
              else topic.replication_factor)
        assignment = assign_replicas(partitions, rf, sorted(broker.metadata_cache.brokers))
    validate_topic_name(name)
    if name in known:
        raise errors.TopicAlreadyExistsError(f"Topic '{name}' already exists.")
    if has_collision_chars(name):
        colliding = sorted(t for t in known if collides(name, t))
        if colliding:
            raise errors.InvalidTopicError(
                f"Topic '{name}' collides with existing topics: {', '.join(colliding)}")
    validate_assignment(assignment)
    broker.topic_defaults.with_overrides(dict(topic.configs))    # LogConfig.validate
    return assignment
