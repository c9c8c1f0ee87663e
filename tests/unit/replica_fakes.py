"""What unit tests of the ReplicaManager give a LeaderAndIsr besides its partition states."""

from kafkalite.protocol import messages as m


def live_leaders(broker_ids) -> list[m.LeaderAndIsrLiveLeader]:
    """The request's live brokers, as a controller lists them: a follower's leader must be one
    (Kafka's makeFollowers), or the state is not taken."""
    return [m.LeaderAndIsrLiveLeader(b, "127.0.0.1", 9090 + b) for b in broker_ids]
