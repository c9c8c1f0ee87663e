"""Topics and metadata: creation and its refusals, Metadata shapes, deletion, ApiVersions.

Which broker leads or replicates a partition is chance in both systems, so the answers carry
counts and relations (the leader is a replica, the ISR is the replica set) instead of ids.
Refusals are asked with raw CreateTopics/CreatePartitions requests where the broker's own
error message matters, since librdkafka may add words of its own around it.
"""

from __future__ import annotations

from confluent_kafka.admin import NewPartitions

from kafkalite.testing.conformance import clients, raw
from kafkalite.testing.conformance.scenario import Context, Family

family = Family("topics")
scenario = family.scenario


def _metadata(ctx: Context, topics: list[str] | None, auto_create: bool = False,
              version: int = 9) -> dict:
    body = {"topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": auto_create,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}
    return raw.call(ctx.addresses[0], 3, version, body)


def _shape(partitions: list[dict]) -> list[dict]:
    """Partition metadata as counts and relations (no broker ids)."""
    return [{"partition": p["partition_index"], "error": p["error_code"],
             "replicas": len(p["replica_nodes"]),
             "leader_is_replica": p["leader_id"] in p["replica_nodes"],
             "isr_is_replicas": sorted(p["isr_nodes"]) == sorted(p["replica_nodes"]),
             "offline": p["offline_replicas"], "leader_epoch": p["leader_epoch"]}
            for p in sorted(partitions, key=lambda p: p["partition_index"])]


def _create_raw(ctx: Context, topics: list[dict], validate_only: bool = False,
                version: int = 5, verbatim: bool = False) -> list[list]:
    """CreateTopics v5 to the controller: [name, error, message] per topic. The message is
    reported as present or not, unless ``verbatim`` (one scenario compares the wording)."""
    body = {"topics": [{"num_partitions": -1, "replication_factor": -1, "assignments": [],
                        "configs": [], **t} for t in topics],
            "timeout": 15000, "validate_only": validate_only}
    answer = raw.call(clients.controller_address(ctx), 19, version, body)
    return [[t["name"], t["error_code"],
             t["error_message"] if verbatim else bool(t["error_message"])]
            for t in answer["topics"]]


@scenario("create-topic-metadata-shape", "CreateTopics", "Metadata")
def create_topic_metadata_shape(ctx: Context) -> object:
    """A 3-partition topic of replication factor 2: what Metadata says about it once created."""
    topic = clients.create_topic(ctx, "t", partitions=3, replication=2)
    answer = _metadata(ctx, [topic])["topics"][0]
    return {"error": answer["error_code"], "internal": answer["is_internal"],
            "partitions": _shape(answer["partitions"])}


@scenario("create-topic-answer-v5", "CreateTopics")
def create_topic_answer_v5(ctx: Context) -> object:
    """CreateTopics v5 answers the partition count, replication factor and the topic's configs
    (KIP-525); a topic left to the defaults gets num.partitions and default.replication.factor."""
    body = {"topics": [{"name": ctx.name("t"), "num_partitions": -1, "replication_factor": -1,
                        "assignments": [], "configs": [{"name": "retention.ms",
                                                        "value": "3600000"}]}],
            "timeout": 15000, "validate_only": False}
    answer = raw.call(clients.controller_address(ctx), 19, 5, body)["topics"][0]
    configs = {c["name"]: [c["value"], c["read_only"], c["config_source"], c["is_sensitive"]]
               for c in answer["configs"] or []}
    return {"error": answer["error_code"], "partitions": answer["num_partitions"],
            "replication": answer["replication_factor"], "config_names": sorted(configs),
            "retention.ms": configs.get("retention.ms")}


@scenario("create-topic-invalid-names", "CreateTopics")
def create_topic_invalid_names(ctx: Context) -> object:
    """Illegal topic names: characters, '.', '..', too long, empty."""
    names = [f"{ctx.prefix} bad!", ".", "..", ctx.prefix + "x" * 250, ""]
    return _create_raw(ctx, [{"name": n, "num_partitions": 1, "replication_factor": 1}
                             for n in names])


@scenario("create-topic-colliding-name", "CreateTopics")
def create_topic_colliding_name(ctx: Context) -> object:
    """'a.b' and 'a_b' collide in metric names: the second is refused."""
    first = _create_raw(ctx, [{"name": ctx.name("a.b"), "num_partitions": 1,
                               "replication_factor": 1}])
    second = _create_raw(ctx, [{"name": ctx.name("a_b"), "num_partitions": 1,
                                "replication_factor": 1}])
    return {"first": first, "second": second}


@scenario("create-topic-already-exists", "CreateTopics")
def create_topic_already_exists(ctx: Context) -> object:
    topic = clients.create_topic(ctx, "t", replication=1)
    return _create_raw(ctx, [{"name": topic, "num_partitions": 1, "replication_factor": 1}])


@scenario("create-topic-replication-above-brokers", "CreateTopics")
def create_topic_replication_above_brokers(ctx: Context) -> object:
    """A replication factor above the broker count."""
    return _create_raw(ctx, [
        {"name": ctx.name("rf4"), "num_partitions": 1, "replication_factor": 4},
    ], validate_only=True)


@scenario("create-topic-non-positive-counts", "CreateTopics")
def create_topic_non_positive_counts(ctx: Context) -> object:
    """Zero or negative partitions, and a replication factor of zero (-1 means the default;
    anything else below 1 is refused)."""
    return _create_raw(ctx, [
        {"name": ctx.name("p0"), "num_partitions": 0, "replication_factor": 1},
        {"name": ctx.name("neg"), "num_partitions": -5, "replication_factor": 1},
        {"name": ctx.name("rf0"), "num_partitions": 1, "replication_factor": 0},
    ], validate_only=True)


@scenario("create-topic-refused-answer-fields", "CreateTopics")
def create_topic_refused_answer_fields(ctx: Context) -> object:
    """What a refused CreateTopics v5 answer carries besides the error: Kafka sets the counts
    to -1 and the configs to null."""
    body = {"topics": [{"name": ctx.name("rf4"), "num_partitions": 2, "replication_factor": 4,
                        "assignments": [], "configs": []}],
            "timeout": 15000, "validate_only": True}
    answer = raw.call(clients.controller_address(ctx), 19, 5, body)["topics"][0]
    return {k: answer[k] for k in ("error_code", "num_partitions", "replication_factor",
                                   "configs")}


@scenario("create-topic-error-messages", "CreateTopics")
def create_topic_error_messages(ctx: Context) -> object:
    """The broker's own wording of CreateTopics refusals (shown to users by the tools)."""
    return _create_raw(ctx, [
        {"name": f"{ctx.prefix} bad!", "num_partitions": 1, "replication_factor": 1},
        {"name": ctx.name("exists"), "num_partitions": 1, "replication_factor": 4},
        {"name": ctx.name("cfg"), "num_partitions": 1, "replication_factor": 1,
         "configs": [{"name": "no.such.config", "value": "1"}]},
        {"name": ctx.name("twice"), "assignments": [{"partition_index": 0,
                                                      "broker_ids": [1, 1]}]},
    ], validate_only=True, verbatim=True)


@scenario("create-topic-invalid-assignments", "CreateTopics")
def create_topic_invalid_assignments(ctx: Context) -> object:
    """Replica assignments naming a broker twice, with uneven replica counts, with gaps in the
    partition numbers."""
    def assign(*parts):
        return [{"partition_index": i, "broker_ids": b} for i, b in parts]

    return _create_raw(ctx, [
        {"name": ctx.name("twice"), "assignments": assign((0, [1, 1]))},
        {"name": ctx.name("uneven"), "assignments": assign((0, [1, 2]), (1, [1]))},
        {"name": ctx.name("gap"), "assignments": assign((0, [1]), (2, [2]))},
    ], validate_only=True)


@scenario("create-topic-assignment-unknown-broker", "CreateTopics")
def create_topic_assignment_unknown_broker(ctx: Context) -> object:
    """An explicit assignment naming broker 99, which does not exist."""
    return _create_raw(ctx, [{"name": ctx.name("unknown"), "assignments": [
        {"partition_index": 0, "broker_ids": [1, 99]}]}], validate_only=True)


@scenario("create-topic-assignment-and-counts", "CreateTopics")
def create_topic_assignment_and_counts(ctx: Context) -> object:
    """An assignment together with a partition count: one or the other, not both."""
    return _create_raw(ctx, [{"name": ctx.name("both"), "num_partitions": 2, "assignments": [
        {"partition_index": 0, "broker_ids": [1]}]}], validate_only=True)


@scenario("create-topic-valid-assignment", "CreateTopics", "Metadata")
def create_topic_valid_assignment(ctx: Context) -> object:
    """An explicit assignment is kept as given: replicas in order, the first one leading."""
    topic = ctx.name("t")
    answer = _create_raw(ctx, [{"name": topic, "assignments": [
        {"partition_index": 0, "broker_ids": [3, 1]},
        {"partition_index": 1, "broker_ids": [2, 3]}]}])
    clients.wait_for(lambda: clients.leaders_known(ctx, topic, 2), "leaders", ctx.timeout_s)
    parts = _metadata(ctx, [topic])["topics"][0]["partitions"]
    return {"create": answer, "partitions": sorted(
        [p["partition_index"], p["replica_nodes"], p["leader_id"]] for p in parts)}


@scenario("create-topic-invalid-configs", "CreateTopics")
def create_topic_invalid_configs(ctx: Context) -> object:
    """A bad value, an unknown name, a value out of range, and a broker-only name."""
    def bad(suffix, name, value):
        return {"name": ctx.name(suffix), "num_partitions": 1, "replication_factor": 1,
                "configs": [{"name": name, "value": value}]}

    return _create_raw(ctx, [bad("policy", "cleanup.policy", "bogus"),
                             bad("unknown", "no.such.config", "1"),
                             bad("range", "min.cleanable.dirty.ratio", "1.5"),
                             bad("notint", "retention.ms", "soon"),
                             bad("broker", "log.retention.ms", "1000")], validate_only=True)


@scenario("create-topic-validate-only", "CreateTopics", "Metadata")
def create_topic_validate_only(ctx: Context) -> object:
    """validate_only answers as a creation would, and creates nothing."""
    topic = ctx.name("t")
    answer = _create_raw(ctx, [{"name": topic, "num_partitions": 2, "replication_factor": 2}],
                         validate_only=True)
    after = _metadata(ctx, [topic])["topics"][0]["error_code"]
    return {"create": answer, "metadata_after": after}


@scenario("create-topic-on-non-controller", "CreateTopics")
def create_topic_on_non_controller(ctx: Context) -> object:
    """CreateTopics sent to a broker that is not the controller (Kafka 2.8 has no forwarding
    yet: NOT_CONTROLLER, and clients retry on the controller)."""
    other = clients.other_address(ctx, clients.controller_address(ctx))
    body = {"topics": [{"name": ctx.name("t"), "num_partitions": 1, "replication_factor": 1,
                        "assignments": [], "configs": []}], "timeout": 5000,
            "validate_only": True}
    answer = raw.call(other, 19, 5, body)["topics"][0]
    return [answer["error_code"], answer["error_message"]]


@scenario("metadata-unknown-topic", "Metadata")
def metadata_unknown_topic(ctx: Context) -> object:
    """Metadata of a topic that does not exist, auto-creation not allowed; and of an illegal
    name with auto-creation allowed."""
    unknown = _metadata(ctx, [ctx.name("none")])["topics"][0]
    illegal = _metadata(ctx, [ctx.name("bad name")], auto_create=True)["topics"][0]
    return {"unknown": [unknown["error_code"], unknown["partitions"]],
            "illegal": [illegal["error_code"], illegal["partitions"]]}


@scenario("metadata-auto-create", "Metadata")
def metadata_auto_create(ctx: Context) -> object:
    """Metadata with auto-creation allowed creates the topic with the broker defaults
    (num.partitions=1, default.replication.factor=3)."""
    topic = ctx.name("auto")
    first = _metadata(ctx, [topic], auto_create=True)["topics"][0]["error_code"]
    clients.wait_for(lambda: clients.leaders_known(ctx, topic, 1), "auto-created leaders",
                     ctx.timeout_s)
    answer = _metadata(ctx, [topic])["topics"][0]
    return {"first": first, "partitions": _shape(answer["partitions"])}


@scenario("metadata-brokers", "Metadata")
def metadata_brokers(ctx: Context) -> object:
    """The broker list of Metadata v9 and v0 (ids, racks) and whether a controller is named."""
    v9 = _metadata(ctx, [])
    v0 = raw.call(ctx.addresses[0], 3, 0, {"topics": [{"name": ctx.name("none")}]})
    return {"v9": sorted([b["node_id"], b["rack"]] for b in v9["brokers"]),
            "v9_controller_known": v9["controller_id"] in (1, 2, 3),
            "v9_topics": v9["topics"],
            "v0": sorted(b["node_id"] for b in v0["brokers"]),
            "v0_topics": [[t["name"], t["error_code"]] for t in v0["topics"]]}


@scenario("metadata-internal-topic", "Metadata", "FindCoordinator")
def metadata_internal_topic(ctx: Context) -> object:
    """__consumer_offsets (created by a group coordinator lookup) is internal with
    offsets.topic.num.partitions partitions of offsets.topic.replication.factor replicas."""
    clients.coordinator_address(ctx, ctx.name("g"))
    answer = _metadata(ctx, ["__consumer_offsets"])["topics"][0]
    shape = _shape(answer["partitions"])
    return {"error": answer["error_code"], "internal": answer["is_internal"],
            "partitions": len(shape), "replicas": sorted({p["replicas"] for p in shape})}


@scenario("describe-topics-admin", "Metadata")
def describe_topics_admin(ctx: Context) -> object:
    """AdminClient.describe_topics: partitions, replica counts, and internal flag."""
    from confluent_kafka import TopicCollection

    topic = clients.create_topic(ctx, "t", partitions=2, replication=3)
    client = clients.admin(ctx)
    futures = client.describe_topics(TopicCollection([topic, ctx.name("none")]))
    out = {}
    for name, future in futures.items():
        result = clients.outcome(future, ctx.timeout_s)
        if isinstance(result, dict):
            out[name] = result
        else:
            out[name] = {"internal": result.is_internal, "partitions": [
                [p.id, len(p.replicas), p.leader in p.replicas, len(p.isr)]
                for p in result.partitions]}
    return out


@scenario("delete-topics", "DeleteTopics", "Metadata")
def delete_topics(ctx: Context) -> object:
    """Deleting a topic, then an unknown one; Metadata once the deletion is done."""
    topic = clients.create_topic(ctx, "t", replication=2)
    answer = raw.call(clients.controller_address(ctx), 20, 5, {
        "topic_names": [topic, ctx.name("none")], "timeout": 15000})
    errors = sorted([r["name"], r["error_code"]] for r in answer["responses"])
    gone = clients.wait_for(
        lambda: _metadata(ctx, [topic])["topics"][0]["error_code"] != "NONE" and
        _metadata(ctx, [topic])["topics"][0]["error_code"], "the topic to go", ctx.timeout_s)
    return {"delete": errors, "metadata_after": gone}


@scenario("create-partitions", "CreatePartitions", "Metadata")
def create_partitions(ctx: Context) -> object:
    """Growing a topic 1 -> 3, then asking for fewer, the same, an unknown topic."""
    topic = clients.create_topic(ctx, "t", partitions=1, replication=2)
    admin = clients.admin(ctx)

    def ask(name, count, validate=False):
        f = admin.create_partitions([NewPartitions(name, count)], validate_only=validate,
                                    operation_timeout=15)
        result = clients.outcome(f[name], ctx.timeout_s)
        return result if isinstance(result, dict) else "ok"

    grown = ask(topic, 3)
    clients.wait_for(lambda: clients.leaders_known(ctx, topic, 3), "3 partitions", ctx.timeout_s)
    answer = _metadata(ctx, [topic])["topics"][0]
    return {"grow": grown, "partitions": _shape(answer["partitions"]),
            "fewer": ask(topic, 2), "same": ask(topic, 3),
            "unknown": ask(ctx.name("none"), 2), "validate": ask(topic, 5, True)}


@scenario("create-partitions-messages", "CreatePartitions")
def create_partitions_messages(ctx: Context) -> object:
    """The broker's messages for refused CreatePartitions (raw v2), and bad assignments."""
    topic = clients.create_topic(ctx, "t", partitions=1, replication=2)
    body = {"topics": [
        {"name": topic, "count": 1, "assignments": None},
        {"name": ctx.name("none"), "count": 2, "assignments": None},
    ], "timeout": 15000, "validate_only": True}
    first = raw.call(clients.controller_address(ctx), 37, 2, body)
    bad = {"topics": [{"name": topic, "count": 3, "assignments": [{"broker_ids": [1, 99]}]}],
           "timeout": 15000, "validate_only": True}
    second = raw.call(clients.controller_address(ctx), 37, 2, bad)
    return sorted([r["name"], r["error_code"], r["error_message"]]
                  for r in first["results"] + second["results"])


@scenario("api-versions-served-maxima", "ApiVersions")
def api_versions_served_maxima(ctx: Context) -> object:
    """ApiVersions v3: the highest version of each API kafkalite serves (Kafka's own for those
    keys), and that the answer is an error-free v3 one."""
    from kafkalite.server.api_table import kafka_ranges

    answer = raw.call(ctx.addresses[0], 18, 3, {"client_software_name": "conformance",
                                                 "client_software_version": "1.0"})
    served = {int(k) for k in kafka_ranges()}
    return {"error": answer["error_code"],
            "maxima": {raw.api_name(k["api_key"]): k["max_version"]
                       for k in answer["api_keys"] if k["api_key"] in served}}


@scenario("api-versions-full-table", "ApiVersions")
def api_versions_full_table(ctx: Context) -> object:
    """Every API and version range advertised (the APIs of Kafka 2.8 kafkalite lacks show
    here)."""
    answer = raw.call(ctx.addresses[0], 18, 0, {})
    return {raw.api_name(k["api_key"]) if k["api_key"] in raw.api_key_map else k["api_key"]:
            [k["min_version"], k["max_version"]] for k in answer["api_keys"]}


@scenario("api-versions-unsupported-version", "ApiVersions")
def api_versions_unsupported_version(ctx: Context) -> object:
    """ApiVersions v99: the broker answers v0 with UNSUPPORTED_VERSION and its ApiVersions
    range, so that the client can retry (KIP-511)."""
    answer = raw.call_header_only(ctx.addresses[0], 18, 99)
    if isinstance(answer, str):
        return answer
    return {"error": answer["error_code"],
            "api_versions": [[k["min_version"], k["max_version"]] for k in answer["api_keys"]
                             if k["api_key"] == 18]}


@scenario("unsupported-request-versions", "Metadata", "Produce", "DescribeCluster")
def unsupported_request_versions(ctx: Context) -> object:
    """Versions beyond Kafka 2.8's (Metadata v12, Produce v10, DescribeCluster v1) and an
    unknown API key: Kafka cannot parse them and closes the connection."""
    return {"Metadata v12": raw.call_header_only(ctx.addresses[0], 3, 12),
            "Produce v10": raw.call_header_only(ctx.addresses[0], 0, 10),
            "DescribeCluster v1": raw.call_header_only(ctx.addresses[0], 60, 1),
            "api key 99": raw.call_header_only(ctx.addresses[0], 99, 0)}


@scenario("describe-cluster", "DescribeCluster")
def describe_cluster(ctx: Context) -> object:
    """DescribeCluster v0: brokers and whether a controller is named."""
    answer = raw.call(ctx.addresses[0], 60, 0, {"include_cluster_authorized_operations": True})
    return {"error": answer["error_code"], "message": answer["error_message"],
            "brokers": sorted([b["broker_id"], b["rack"]] for b in answer["brokers"]),
            "controller_known": answer["controller_id"] in (1, 2, 3),
            "authorized_operations": answer["cluster_authorized_operations"]}

