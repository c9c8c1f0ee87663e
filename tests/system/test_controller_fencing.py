"""A controller whose ZooKeeper session expired can change nothing: its ZooKeeper writes fail the
/controller_epoch check, and brokers answer its requests with STALE_CONTROLLER_EPOCH.

The deposed controller runs in this process (the real Controller class on a real reactor thread)
so the test can expire its session with the session-expiry helper and then make it try to act.
"""

import threading

import pytest
from twisted.internet import threads

from kafkalite import errors
from kafkalite.config import BrokerConfig
from kafkalite.controller.controller import Controller
from kafkalite.protocol import messages as m
from kafkalite.local.cluster import request, wait_until
from kafkalite.zk import ZkClient, ZkState
from kafkalite.zk.errors import ControllerMovedError
from kafkalite.zk.twisted_bridge import TwistedZk

pytestmark = pytest.mark.system


@pytest.fixture(scope="module")
def reactor():
    from twisted.internet import reactor as global_reactor

    if not global_reactor.running:
        thread = threading.Thread(target=global_reactor.run,
                                  kwargs={"installSignalHandlers": False}, daemon=True)
        thread.start()
        wait_until(lambda: global_reactor.running, 10, "the reactor thread")
    return global_reactor


def test_deposed_controller_is_fenced(reactor, zk_connect, zk_expire, kafkalite_cluster_factory):
    config = BrokerConfig.from_dict({"broker.id": "100", "zookeeper.connect": zk_connect,
                                     "auto.leader.rebalance.enable": "false"})
    zk = ZkClient(zk_connect, session_timeout_ms=4000, reactor=reactor).start()
    deferred_zk = TwistedZk(zk, reactor)
    controller = Controller(100, zk, deferred_zk, reactor, config)
    zk.add_state_listener(lambda state: state == ZkState.LOST and controller.session_lost())
    threads.blockingCallFromThread(reactor, controller.start)
    wait_until(lambda: controller.is_active, 30, "the in-process controller to win")
    old_epoch, old_version = controller.epoch, controller.epoch_zk_version

    cluster = kafkalite_cluster_factory(2)     # brokers 1 and 2; broker 100 stays controller
    assert cluster.controller_id() == 100
    zk.create_topic("fenced", {0: [1, 2]})
    wait_until(lambda: (zk.get_partition_state("fenced", 0) or 0) and
               zk.get_partition_state("fenced", 0).leader == 1, 30, "leader 1 elected by 100")

    zk_expire(zk)                              # the session ends: /controller goes with it
    wait_until(lambda: zk.get_controller_id() in (1, 2), 30, "a broker to take over")
    new_controller = zk.get_controller_id()
    for broker in cluster.brokers.values():   # each broker has heard from the new controller
        wait_until(lambda: request("127.0.0.1", broker.port, m.MetadataRequest(topics=[]))
                   .controller_id == new_controller, 30, f"broker {broker.broker_id} to see it")
    wait_until(lambda: not controller.is_active, 10, "the old controller to step down")
    new_epoch = zk.get_controller_epoch().epoch
    assert new_epoch > old_epoch
    before = zk.get_partition_state("fenced", 0)

    # the deposed controller, acting on its stale view, tries to move leadership to broker 2
    controller.is_active, controller.epoch, controller.epoch_zk_version = (True, old_epoch,
                                                                          old_version)
    controller.context.states[("fenced", 0)] = before
    stale = before.__class__(2, before.leader_epoch + 1, old_epoch, before.isr,
                             before.zk_version)
    with pytest.raises(ControllerMovedError):
        threads.blockingCallFromThread(reactor, controller._write_states,
                                       {("fenced", 0): stale})
    assert zk.get_partition_state("fenced", 0) == before          # nothing changed

    # and brokers refuse its requests
    leader_and_isr = m.LeaderAndIsrRequest(
        controller_id=100, controller_epoch=old_epoch, partition_states=[
            m.LeaderAndIsrPartitionState("fenced", 0, old_epoch, 2, before.leader_epoch + 1,
                                         list(before.isr), 0, [1, 2])])
    for broker in cluster.brokers.values():
        answer = request("127.0.0.1", broker.port, leader_and_isr)
        assert answer.error_code == errors.StaleControllerEpochError.code
    assert cluster.leader_of("fenced", 0) == before.leader
    controller.is_active = False
    threads.blockingCallFromThread(reactor, controller.stop)
    deferred_zk.stop()
    zk.stop()
