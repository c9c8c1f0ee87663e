"""Topic and configuration admin: CreateTopics (19), DeleteTopics (20), CreatePartitions (37),
DescribeConfigs (32), AlterConfigs (33) and IncrementalAlterConfigs (44).
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.messages.base import Int16, Int32, Int8, Request, Response, _message


# ================================================================================================
# CreateTopics (19)
# ================================================================================================


class CreatableTopic(NamedTuple):
    name: str
    num_partitions: Int32                      # -1 when assignments are given
    replication_factor: Int16                  # -1 when assignments are given
    assignments: dict[Int32, list[Int32]]      # {partition: [broker ids]}, {} = let the broker choose
    configs: dict[str, str | None]             # topic-level config overrides


class CreatableTopicConfig(NamedTuple):
    """One config of a created topic, as DescribeConfigs renders it (CreateTopics v5+)."""
    name: str
    value: str | None
    read_only: bool
    config_source: Int8                        # Kafka's ConfigSource (DescribeConfigsEntry's)
    is_sensitive: bool


class CreatableTopicResult(NamedTuple):
    name: str
    error_code: Int16
    error_message: str | None = None
    # KIP-525 (CreateTopics v5+): what was created, or -1, -1, [] for a refused topic
    num_partitions: Int32 = -1
    replication_factor: Int16 = -1
    configs: list[CreatableTopicConfig] = []
    topic_config_error_code: Int16 = 0         # TOPIC_AUTHORIZATION_FAILED: no DescribeConfigs


@_message(ApiKey.CREATE_TOPICS)
class CreateTopicsRequest(Request):
    topics: list[CreatableTopic] = field(default_factory=list)
    timeout_ms: Int32 = 30000
    validate_only: bool = False

    def error_response(self, error_code, error_message=None):
        return CreateTopicsResponse(topics=[CreatableTopicResult(t.name, error_code, error_message)
                                            for t in self.topics])


@_message(ApiKey.CREATE_TOPICS)
class CreateTopicsResponse(Response):
    throttle_time_ms: Int32 = 0
    topics: list[CreatableTopicResult] = field(default_factory=list)


# ================================================================================================
# DeleteTopics (20)
# ================================================================================================


class DeletableTopicResult(NamedTuple):
    name: str | None                           # None: a topic id the client may not Describe
    error_code: Int16
    error_message: str | None = None
    topic_id: str | None = None                # as asked (DeleteTopics v6 by id), base64url


@_message(ApiKey.DELETE_TOPICS)
class DeleteTopicsRequest(Request):
    topic_names: list[str] = field(default_factory=list)
    timeout_ms: Int32 = 30000
    topic_ids: list[str] = field(default_factory=list)   # v6: topics named by id (base64url)

    def error_response(self, error_code, error_message=None):
        return DeleteTopicsResponse(responses=[
            *(DeletableTopicResult(n, error_code, error_message) for n in self.topic_names),
            *(DeletableTopicResult(None, error_code, error_message, i) for i in self.topic_ids)])


@_message(ApiKey.DELETE_TOPICS)
class DeleteTopicsResponse(Response):
    throttle_time_ms: Int32 = 0
    responses: list[DeletableTopicResult] = field(default_factory=list)


# ================================================================================================
# DescribeConfigs (32)
# ================================================================================================

CONFIG_RESOURCE_TOPIC = 2            # Kafka's ConfigResource.Type codes
CONFIG_RESOURCE_BROKER = 4


class DescribeConfigsResource(NamedTuple):
    resource_type: Int8
    resource_name: str
    config_names: list[str] | None = None     # None = every config of the resource


class DescribeConfigsSynonym(NamedTuple):
    name: str
    value: str | None
    source: Int8                               # Kafka's ConfigSource, as config_source


class DescribeConfigsEntry(NamedTuple):
    name: str
    value: str | None
    read_only: bool = False
    is_default: bool = False                   # config_source == 5 (DEFAULT_CONFIG)
    is_sensitive: bool = False
    config_source: Int8 = -1                   # Kafka's ConfigSource: 1 topic override,
                                               # 4 server.properties, 5 default, 6 logger
    synonyms: list[DescribeConfigsSynonym] = []   # with include_synonyms, most specific first
    config_type: Int8 = 0                      # Kafka's ConfigType: 1 boolean .. 9 password
    documentation: str | None = None           # with include_documentation


class DescribeConfigsResult(NamedTuple):
    error_code: Int16
    error_message: str | None
    resource_type: Int8
    resource_name: str
    configs: list[DescribeConfigsEntry]


@_message(ApiKey.DESCRIBE_CONFIGS)
class DescribeConfigsRequest(Request):
    resources: list[DescribeConfigsResource] = field(default_factory=list)
    include_synonyms: bool = False
    include_documentation: bool = False

    def error_response(self, error_code, error_message=None):
        return DescribeConfigsResponse(results=[
            DescribeConfigsResult(error_code, error_message, r.resource_type, r.resource_name, [])
            for r in self.resources])


@_message(ApiKey.DESCRIBE_CONFIGS)
class DescribeConfigsResponse(Response):
    throttle_time_ms: Int32 = 0
    results: list[DescribeConfigsResult] = field(default_factory=list)


# ================================================================================================
# CreatePartitions (37)
# ================================================================================================


class CreatePartitionsTopic(NamedTuple):
    name: str
    count: Int32                               # the new total number of partitions
    assignments: list[list[Int32]] | None      # one broker-id list per added partition; None =
                                               # let the broker choose


class CreatePartitionsTopicResult(NamedTuple):
    name: str
    error_code: Int16
    error_message: str | None = None


@_message(ApiKey.CREATE_PARTITIONS)
class CreatePartitionsRequest(Request):
    topics: list[CreatePartitionsTopic] = field(default_factory=list)
    timeout_ms: Int32 = 30000
    validate_only: bool = False

    def error_response(self, error_code, error_message=None):
        return CreatePartitionsResponse(results=[
            CreatePartitionsTopicResult(t.name, error_code, error_message) for t in self.topics])


@_message(ApiKey.CREATE_PARTITIONS)
class CreatePartitionsResponse(Response):
    throttle_time_ms: Int32 = 0
    results: list[CreatePartitionsTopicResult] = field(default_factory=list)


# ================================================================================================
# AlterConfigs (33) and IncrementalAlterConfigs (44)
# ================================================================================================

CONFIG_RESOURCE_BROKER_LOGGER = 8
CONFIG_OP_SET = 0                    # Kafka's AlterConfigOp.OpType
CONFIG_OP_DELETE = 1
CONFIG_OP_APPEND = 2
CONFIG_OP_SUBTRACT = 3


class AlterableConfig(NamedTuple):
    name: str
    value: str | None


class AlterConfigsResource(NamedTuple):
    resource_type: Int8
    resource_name: str
    configs: list[AlterableConfig]             # a topic's complete new set of overrides


class AlterConfigsResourceResponse(NamedTuple):
    error_code: Int16
    error_message: str | None
    resource_type: Int8
    resource_name: str


@_message(ApiKey.ALTER_CONFIGS)
class AlterConfigsRequest(Request):
    resources: list[AlterConfigsResource] = field(default_factory=list)
    validate_only: bool = False

    def error_response(self, error_code, error_message=None):
        return AlterConfigsResponse(responses=[
            AlterConfigsResourceResponse(error_code, error_message, r.resource_type,
                                         r.resource_name) for r in self.resources])


@_message(ApiKey.ALTER_CONFIGS)
class AlterConfigsResponse(Response):
    throttle_time_ms: Int32 = 0
    responses: list[AlterConfigsResourceResponse] = field(default_factory=list)


class AlterableConfigOp(NamedTuple):
    name: str
    config_operation: Int8                     # CONFIG_OP_SET / _DELETE / _APPEND / _SUBTRACT
    value: str | None


class IncrementalAlterConfigsResource(NamedTuple):
    resource_type: Int8
    resource_name: str
    configs: list[AlterableConfigOp]


@_message(ApiKey.INCREMENTAL_ALTER_CONFIGS)
class IncrementalAlterConfigsRequest(Request):
    resources: list[IncrementalAlterConfigsResource] = field(default_factory=list)
    validate_only: bool = False

    def error_response(self, error_code, error_message=None):
        return IncrementalAlterConfigsResponse(responses=[
            AlterConfigsResourceResponse(error_code, error_message, r.resource_type,
                                         r.resource_name) for r in self.resources])


@_message(ApiKey.INCREMENTAL_ALTER_CONFIGS)
class IncrementalAlterConfigsResponse(Response):
    throttle_time_ms: Int32 = 0
    responses: list[AlterConfigsResourceResponse] = field(default_factory=list)
