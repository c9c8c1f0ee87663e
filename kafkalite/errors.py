"""Every error kafkalite knows, in one table.

Wire errors carry Kafka's numeric codes (the same numbers Kafka uses, so a reader who knows Kafka's
``Errors.java`` recognises them). Each code maps to one exception class; ``for_code`` turns a code
from a response back into the exception a client raises. ``retriable`` says whether a client may
retry the same request after refreshing its metadata.

Client-side errors that never travel on the wire (timeouts, no reachable broker) have code ``None``.
"""

from __future__ import annotations


class KafkaError(Exception):
    """Base of every kafkalite error. ``code`` is the wire code, ``retriable`` the retry rule."""

    code: int | None = None
    name: str = "KAFKA_ERROR"
    retriable: bool = False
    description: str = ""

    def __init__(self, message: str | None = None):
        self.message = message or self.description or self.name
        super().__init__(self.message)

    def __str__(self) -> str:
        if self.code is None:
            return self.message
        return f"[{self.name}] {self.message}"


_BY_CODE: dict[int, type[KafkaError]] = {}
_BY_NAME: dict[str, type[KafkaError]] = {}


def _error(code: int | None, name: str, retriable: bool, description: str,
           base: type[KafkaError] = KafkaError) -> type[KafkaError]:
    words = [part.capitalize() for part in name.split("_")]
    while words and words[-1] in ("Error", "Exception"):
        words.pop()
    class_name = "".join(words) + "Error"
    cls = type(class_name, (base,), {
        "code": code, "name": name, "retriable": retriable, "description": description,
        "__module__": __name__, "__doc__": description,
    })
    if code is not None:
        if code in _BY_CODE:
            raise RuntimeError(f"duplicate error code {code}")
        _BY_CODE[code] = cls
    _BY_NAME[name] = cls
    return cls


# --- the table: (code, NAME, retriable, what it means) -----------------------------------------
NONE = 0
UnknownServerError = _error(-1, "UNKNOWN_SERVER_ERROR", False,
                            "The server hit an unexpected error while handling the request")
OffsetOutOfRangeError = _error(1, "OFFSET_OUT_OF_RANGE", False,
                               "The requested offset is not in the log")
CorruptRecordError = _error(2, "CORRUPT_MESSAGE", True,
                            "A record batch is corrupt (bad length, CRC or encoding)")
UnknownTopicOrPartitionError = _error(3, "UNKNOWN_TOPIC_OR_PARTITION", True,
                                      "This broker does not host that topic-partition")
InvalidFetchSizeError = _error(4, "INVALID_FETCH_SIZE", False, "The fetch size is invalid")
LeaderNotAvailableError = _error(5, "LEADER_NOT_AVAILABLE", True,
                                 "The partition has no leader right now (election in progress)")
NotLeaderForPartitionError = _error(6, "NOT_LEADER_OR_FOLLOWER", True,
                                    "This broker is not the leader for that partition")
RequestTimedOutError = _error(7, "REQUEST_TIMED_OUT", True, "The request timed out")
BrokerNotAvailableError = _error(8, "BROKER_NOT_AVAILABLE", True, "The broker is not available")
ReplicaNotAvailableError = _error(9, "REPLICA_NOT_AVAILABLE", True,
                                  "The replica is not available for that partition")
MessageTooLargeError = _error(10, "MESSAGE_TOO_LARGE", False,
                              "The batch is larger than max.message.bytes")
StaleControllerEpochError = _error(11, "STALE_CONTROLLER_EPOCH", False,
                                   "The request came from a controller with an old epoch")
OffsetMetadataTooLargeError = _error(12, "OFFSET_METADATA_TOO_LARGE", False,
                                     "The committed offset's metadata is larger than "
                                     "offset.metadata.max.bytes")
NetworkError = _error(13, "NETWORK_EXCEPTION", True, "The connection was lost")
CoordinatorLoadInProgressError = _error(14, "COORDINATOR_LOAD_IN_PROGRESS", True,
                                        "The coordinator is loading its groups; retry")
CoordinatorNotAvailableError = _error(15, "COORDINATOR_NOT_AVAILABLE", True,
                                      "The coordinator is not available")
NotCoordinatorError = _error(16, "NOT_COORDINATOR", True,
                             "This broker is not the coordinator of the group")
InvalidTopicError = _error(17, "INVALID_TOPIC_EXCEPTION", False, "The topic name is not valid")
RecordListTooLargeError = _error(18, "RECORD_LIST_TOO_LARGE", False,
                                 "The request is larger than the maximum allowed")
NotEnoughReplicasError = _error(19, "NOT_ENOUGH_REPLICAS", True,
                                "Fewer in-sync replicas than min.insync.replicas")
NotEnoughReplicasAfterAppendError = _error(20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True,
                                           "Appended, but the ISR shrank below min.insync.replicas")
InvalidRequiredAcksError = _error(21, "INVALID_REQUIRED_ACKS", False,
                                  "acks must be 0, 1 or -1 (all)")
IllegalGenerationError = _error(22, "ILLEGAL_GENERATION", False,
                                "The generation id is not the group's current one")
InconsistentGroupProtocolError = _error(23, "INCONSISTENT_GROUP_PROTOCOL", False,
                                        "The member's protocol type or protocols do not match "
                                        "the group's")
InvalidGroupIdError = _error(24, "INVALID_GROUP_ID", False, "The group id is not valid")
UnknownMemberIdError = _error(25, "UNKNOWN_MEMBER_ID", False,
                              "The member id is not known to the coordinator")
InvalidSessionTimeoutError = _error(26, "INVALID_SESSION_TIMEOUT", False,
                                    "The session timeout is outside the broker's allowed range")
RebalanceInProgressError = _error(27, "REBALANCE_IN_PROGRESS", False,
                                  "The group is rebalancing; rejoin")
InvalidCommitOffsetSizeError = _error(28, "INVALID_COMMIT_OFFSET_SIZE", False,
                                      "The offset commit's metadata is too large")
TopicAuthorizationFailedError = _error(29, "TOPIC_AUTHORIZATION_FAILED", False,
                                       "Not authorized to access the topic: ask an admin for an "
                                       "ACL (kafkalite acls --add)")
GroupAuthorizationFailedError = _error(30, "GROUP_AUTHORIZATION_FAILED", False,
                                       "Not authorized to access the group")
ClusterAuthorizationFailedError = _error(31, "CLUSTER_AUTHORIZATION_FAILED", False,
                                         "Not authorized for this cluster operation")
UnsupportedSaslMechanismError = _error(33, "UNSUPPORTED_SASL_MECHANISM", False,
                                       "The broker does not enable that SASL mechanism on this "
                                       "listener (sasl.enabled.mechanisms)")
IllegalSaslStateError = _error(34, "ILLEGAL_SASL_STATE", False,
                               "A request came in the wrong state of the SASL exchange")
InvalidTimestampError = _error(32, "INVALID_TIMESTAMP", False, "A timestamp is out of range")
UnsupportedVersionError = _error(35, "UNSUPPORTED_VERSION", False,
                                 "The broker does not support this API or version")
TopicAlreadyExistsError = _error(36, "TOPIC_ALREADY_EXISTS", False, "The topic already exists")
InvalidPartitionsError = _error(37, "INVALID_PARTITIONS", False,
                                "The number of partitions is invalid")
InvalidReplicationFactorError = _error(38, "INVALID_REPLICATION_FACTOR", False,
                                       "The replication factor is invalid")
InvalidReplicaAssignmentError = _error(39, "INVALID_REPLICA_ASSIGNMENT", False,
                                       "The replica assignment is invalid")
InvalidConfigError = _error(40, "INVALID_CONFIG", False, "A configuration value is invalid")
NotControllerError = _error(41, "NOT_CONTROLLER", True, "This broker is not the controller")
InvalidRequestError = _error(42, "INVALID_REQUEST", False,
                             "The request is malformed or violates the protocol")
UnsupportedForMessageFormatError = _error(
    43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", False,
    "The topic's message format version does not support the request (e.g. idempotent records "
    "on a magic 0/1 topic)")
PolicyViolationError = _error(44, "POLICY_VIOLATION", False,
                              "The request breaks a policy of the topic (e.g. its cleanup.policy)")
OutOfOrderSequenceNumberError = _error(45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False,
                                       "The broker saw a gap in the producer's sequence numbers")
DuplicateSequenceNumberError = _error(46, "DUPLICATE_SEQUENCE_NUMBER", False,
                                      "The batch was already written")
InvalidProducerEpochError = _error(47, "INVALID_PRODUCER_EPOCH", False,
                                   "The producer has been fenced by a newer epoch")
InvalidTxnStateError = _error(48, "INVALID_TXN_STATE", False,
                              "The producer attempted a transactional operation in an invalid "
                              "state")
InvalidProducerIdMappingError = _error(49, "INVALID_PRODUCER_ID_MAPPING", False,
                                       "The producer attempted to use a producer id which is not "
                                       "currently assigned to its transactional id")
InvalidTransactionTimeoutError = _error(50, "INVALID_TRANSACTION_TIMEOUT", False,
                                        "The transaction timeout is larger than the maximum value "
                                        "allowed by the broker (as configured by "
                                        "transaction.max.timeout.ms)")
ConcurrentTransactionsError = _error(51, "CONCURRENT_TRANSACTIONS", True,
                                     "The producer attempted to update a transaction while "
                                     "another concurrent operation on the same transaction was "
                                     "ongoing")
TransactionCoordinatorFencedError = _error(52, "TRANSACTION_COORDINATOR_FENCED", False,
                                           "Indicates that the transaction coordinator sending a "
                                           "WriteTxnMarker is no longer the current coordinator "
                                           "for a given producer")
TransactionalIdAuthorizationFailedError = _error(53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                                                 False, "Not authorized to use the transactional id")
SecurityDisabledError = _error(54, "SECURITY_DISABLED", False,
                               "No authorizer is configured on the broker "
                               "(authorizer.class.name)")
OperationNotAttemptedError = _error(55, "OPERATION_NOT_ATTEMPTED", False,
                                    "The broker did not attempt to execute this operation. This "
                                    "may happen for batched RPCs where some operations in the "
                                    "batch failed, causing the broker to respond without trying "
                                    "the rest.")
KafkaStorageError = _error(56, "KAFKA_STORAGE_ERROR", True,
                           "The log directory failed (disk full or I/O error)")
LogDirNotFoundError = _error(57, "LOG_DIR_NOT_FOUND", False,
                             "The user-specified log directory is not found in the broker config.")
SaslAuthenticationFailedError = _error(58, "SASL_AUTHENTICATION_FAILED", False,
                                       "SASL authentication failed: check the user name, the "
                                       "password and the mechanism")
UnknownProducerIdError = _error(59, "UNKNOWN_PRODUCER_ID", False,
                                "This exception is raised by the broker if it could not locate the "
                                "producer metadata associated with the producerId in question. "
                                "This could happen if, for instance, the producer's records were "
                                "deleted because their retention time had elapsed. Once the last "
                                "records of the producerId are removed, the producer's metadata is "
                                "removed from the broker, and future appends by the producer will "
                                "return this exception.")
ReassignmentInProgressError = _error(60, "REASSIGNMENT_IN_PROGRESS", False,
                                     "A partition reassignment is in progress for that topic")
DelegationTokenAuthDisabledError = _error(61, "DELEGATION_TOKEN_AUTH_DISABLED", False,
                                          "Delegation Token feature is not enabled.")
DelegationTokenNotFoundError = _error(62, "DELEGATION_TOKEN_NOT_FOUND", False,
                                      "Delegation Token is not found on server.")
DelegationTokenOwnerMismatchError = _error(63, "DELEGATION_TOKEN_OWNER_MISMATCH", False,
                                           "Specified Principal is not valid Owner/Renewer.")
DelegationTokenRequestNotAllowedError = _error(
    64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", False,
    "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on "
    "delegation token authenticated channels.")
DelegationTokenAuthorizationFailedError = _error(65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
                                                 False, "Delegation Token authorization failed.")
DelegationTokenExpiredError = _error(66, "DELEGATION_TOKEN_EXPIRED", False,
                                     "Delegation Token is expired.")
InvalidPrincipalTypeError = _error(67, "INVALID_PRINCIPAL_TYPE", False,
                                   "Supplied principalType is not supported.")
NonEmptyGroupError = _error(68, "NON_EMPTY_GROUP", False, "The group still has live members")
GroupIdNotFoundError = _error(69, "GROUP_ID_NOT_FOUND", False, "The group does not exist")
FetchSessionIdNotFoundError = _error(70, "FETCH_SESSION_ID_NOT_FOUND", True,
                                      "The fetch session ID was not found")
TopicDeletionDisabledError = _error(73, "TOPIC_DELETION_DISABLED", False,
                                    "delete.topic.enable is false on the broker")
FencedLeaderEpochError = _error(74, "FENCED_LEADER_EPOCH", True,
                                "The leader epoch in the request is older than the broker's")
UnknownLeaderEpochError = _error(75, "UNKNOWN_LEADER_EPOCH", True,
                                 "The leader epoch in the request is newer than the broker's")
UnsupportedCompressionTypeError = _error(76, "UNSUPPORTED_COMPRESSION_TYPE", False,
                                         "The compression type is not supported")
StaleBrokerEpochError = _error(77, "STALE_BROKER_EPOCH", False,
                               "The request carries an old broker epoch")
PreferredLeaderNotAvailableError = _error(80, "PREFERRED_LEADER_NOT_AVAILABLE", True,
                                          "The preferred leader is not live or not in the ISR")
EligibleLeadersNotAvailableError = _error(83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", True,
                                          "No live in-sync replica can become leader")
MemberIdRequiredError = _error(79, "MEMBER_ID_REQUIRED", False,
                               "The group requires a member id: join again with the one given")
GroupMaxSizeReachedError = _error(81, "GROUP_MAX_SIZE_REACHED", False,
                                  "The group has reached its maximum size (group.max.size)")
FencedInstanceIdError = _error(82, "FENCED_INSTANCE_ID", False,
                               "Another member with the same group.instance.id replaced this one")
ElectionNotNeededError = _error(84, "ELECTION_NOT_NEEDED", False,
                                "The preferred replica already leads")
NoReassignmentInProgressError = _error(85, "NO_REASSIGNMENT_IN_PROGRESS", False,
                                       "No reassignment is in progress for that partition")
GroupSubscribedToTopicError = _error(86, "GROUP_SUBSCRIBED_TO_TOPIC", False,
                                     "The group is subscribed to the topic of the offsets")
InvalidRecordError = _error(87, "INVALID_RECORD", False, "A record failed validation")
# KIP-554's SCRAM credential errors and KIP-584's feature update failure (Kafka's messages)
ProducerFencedError = _error(90, "PRODUCER_FENCED", False,
                             "There is a newer producer with the same transactionalId which "
                             "fences the current one.")
ResourceNotFoundError = _error(91, "RESOURCE_NOT_FOUND", False,
                               "A request illegally referred to a resource that does not exist.")
DuplicateResourceError = _error(92, "DUPLICATE_RESOURCE", False,
                                "A request illegally referred to the same resource twice.")
UnacceptableCredentialError = _error(93, "UNACCEPTABLE_CREDENTIAL", False,
                                     "Requested credential would not meet criteria for "
                                     "acceptability.")
FeatureUpdateFailedError = _error(96, "FEATURE_UPDATE_FAILED", False,
                                  "Unable to update finalized features due to an unexpected "
                                  "server error.")

# --- client- and process-side errors (never on the wire) ---------------------------------------
UnstableOffsetCommitError = _error(88, "UNSTABLE_OFFSET_COMMIT", True,
                                   "There are unstable offsets for the partition")
KafkaTimeoutError = _error(None, "KAFKA_TIMEOUT", True,
                           "Timed out waiting for the cluster")
NoBrokersAvailableError = _error(None, "NO_BROKERS_AVAILABLE", True,
                                 "None of the bootstrap servers could be reached")
ConfigError = _error(None, "CONFIG_ERROR", False, "A configuration value is invalid",
                     base=InvalidConfigError)
ZooKeeperError = _error(None, "ZOOKEEPER_ERROR", True, "A ZooKeeper operation failed")
IllegalStateError = _error(None, "ILLEGAL_STATE", False,
                           "An operation was called in a state that does not allow it")
RebalanceFailedError = _error(None, "REBALANCE_FAILED", False,
                              "The consumer could not claim its partitions after every retry")
NoOffsetForPartitionError = _error(None, "NO_OFFSET_FOR_PARTITION", False,
                                   "No committed offset and auto_offset_reset='none'")
SslAuthenticationFailedError = _error(None, "SSL_AUTHENTICATION_FAILED", False,
                                      "The TLS handshake failed: check the CA (ssl_cafile), the "
                                      "broker's certificate and its host name")
UnsupportedLogFormatError = _error(None, "UNSUPPORTED_LOG_FORMAT", False,
                                   "A log dir holds batches in a record format this version "
                                   "cannot read", base=KafkaStorageError)


def for_code(code: int, message: str | None = None) -> KafkaError:
    """The exception for a wire error code (an unknown code becomes UNKNOWN_SERVER_ERROR)."""
    cls = _BY_CODE.get(code)
    if cls is None:
        return UnknownServerError(f"unknown error code {code}: {message or ''}".strip())
    return cls(message)


def by_name(name: str) -> type[KafkaError]:
    return _BY_NAME[name]


def code_of(exc: BaseException) -> int:
    """The wire code to send for an exception raised while serving a request."""
    code = getattr(exc, "code", None)
    if isinstance(exc, KafkaError) and code is None:
        # client/process-side subclasses of a wire error answer with their base's code
        for base in type(exc).__mro__:
            if getattr(base, "code", None) is not None:
                return base.code
        return UnknownServerError.code
    return code if isinstance(code, int) else UnknownServerError.code


def all_errors() -> list[type[KafkaError]]:
    return sorted(_BY_CODE.values(), key=lambda c: c.code)
