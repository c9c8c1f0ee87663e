"""Ask the brokers every few seconds what ZooKeeper cannot tell: offsets (hence producers' rates
and lag, and each partition's last stable offset), the coordinator's groups and the transaction
coordinators' log. The questions run on a thread of their own (the clients block); the answers
are applied on the reactor thread.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from twisted.internet import task

from kafkalite.console import sentences as say
from kafkalite.console.broker_reader import BrokerReader, LeaderTarget, PartitionOffsets
from kafkalite.console.model import COORDINATOR_KIND, Change, ClusterModel
from kafkalite.console.rates import RateTracker
from kafkalite.console.transactions import TransactionTracker, TxnRecord

log = logging.getLogger(__name__)


def coordinator_group_changes(old: list[dict] | None, new: list[dict]) -> list[Change]:
    """Members joining and leaving, and new assignments, between two samples of the
    coordinator's groups (``old`` None: the first sample, which describes what already was)."""
    if old is None:
        return []
    before = {g["group"]: g for g in old}
    out = []
    for group in new:
        name = group["group"]
        prev = before.pop(name, {"members": []})
        old_members = {m["id"] for m in prev["members"]}
        new_members = {m["id"] for m in group["members"]}
        data = {"group": name, "group_kind": COORDINATOR_KIND}
        for member in sorted(new_members - old_members):
            out.append(Change("member_joined", say.member_joined(
                name, COORDINATOR_KIND, member, len(new_members)), {**data, "member": member}))
        for member in sorted(old_members - new_members):
            out.append(Change("member_left", say.member_left(
                name, COORDINATOR_KIND, member, len(new_members)), {**data, "member": member}))
        assignment = {m["id"]: [tuple(tp) for tp in m["partitions"]] for m in group["members"]}
        old_assignment = {m["id"]: [tuple(tp) for tp in m["partitions"]] for m in prev["members"]}
        if assignment != old_assignment and assignment:
            out.append(Change("group_rebalanced",
                              say.group_assignment(name, COORDINATOR_KIND, assignment), data))
    for name in sorted(before):
        out.append(Change("group_gone", say.group_gone(name, COORDINATOR_KIND),
                          {"group": name, "group_kind": COORDINATOR_KIND}))
    return out


class BrokerSampler:
    def __init__(self, model: ClusterModel, reader: BrokerReader, clock: Any,
                 run_in_thread: Callable[..., Any], on_changes: Callable[[list[Change]], Any],
                 bootstrap_servers: str | None = None, interval_s: float = 2.0):
        self._model = model
        self._reader = reader
        self._clock = clock
        self._run_in_thread = run_in_thread
        self._on_changes = on_changes
        self._bootstrap = bootstrap_servers
        self.offsets: dict[tuple[str, int], PartitionOffsets] = {}
        self.rates = RateTracker()
        self.coordinator_groups: list[dict] = []
        self.transactions = TransactionTracker()
        self._seen_groups = False
        self._busy = False
        self._loop = task.LoopingCall(self.sample)
        self._loop.clock = clock
        self.interval_s = interval_s

    def start(self) -> None:
        self._loop.start(self.interval_s, now=True)

    def stop(self) -> None:
        if self._loop.running:
            self._loop.stop()

    def _targets(self) -> list[LeaderTarget]:
        targets = []
        for topic, info in self._model.topics.items():
            for partition, state in info.states.items():
                broker = self._model.brokers.get(state.leader)
                if broker is None or not broker.alive or broker.registration is None:
                    continue
                reg = broker.registration
                host, port = reg.endpoint() or (reg.host, reg.port)
                targets.append(LeaderTarget(topic, partition, state.leader, host, port))
        return targets

    def _bootstrap_servers(self) -> str | None:
        if self._bootstrap:
            return self._bootstrap
        live = [b.registration for b in self._model.brokers.values()
                if b.alive and b.registration is not None]
        return ",".join(f"{r.host}:{r.port}" for r in live) or None

    def sample(self) -> Any:
        """One round (skipped while the previous one still runs: a slow broker must not pile
        rounds up)."""
        if self._busy:
            return None
        self._busy = True
        d = self._run_in_thread(self._ask, self._targets(), self._bootstrap_servers())
        d.addCallback(self._apply)
        d.addErrback(lambda f: log.warning("sampling the brokers failed: %s",
                                           f.getErrorMessage()))

        def done(_: Any) -> None:
            self._busy = False
        d.addBoth(done)
        return None      # never hand the Deferred to LoopingCall: a slow round must not stop it

    def _ask(self, targets: list[LeaderTarget], bootstrap: str | None
             ) -> tuple[dict, list[dict] | None, list[TxnRecord] | None]:
        if self._bootstrap:
            # the address the given bootstrap listener reaches, not the registration's first
            addresses = self._reader.broker_addresses(self._bootstrap)
            targets = [LeaderTarget(t.topic, t.partition, t.leader,
                                    *addresses.get(t.leader, (t.host, t.port))) for t in targets]
        offsets = self._reader.read_offsets(targets)
        groups = self._reader.read_coordinator_groups(bootstrap) if bootstrap else None
        records = self._reader.read_transactions(bootstrap) if bootstrap else None
        return offsets, groups, records

    def _apply(self, result: tuple[dict, list[dict] | None, list[TxnRecord] | None]) -> None:
        offsets, groups, records = result
        # a partition whose leader did not answer keeps its last known offsets
        known = {(t, p) for t, info in self._model.topics.items() for p in info.assignment}
        self.offsets = {**{tp: o for tp, o in self.offsets.items() if tp in known}, **offsets}
        self.rates.add(self._clock.seconds(),
                       {tp: o.high_watermark for tp, o in self.offsets.items()})
        if groups is not None:
            changes = coordinator_group_changes(
                self.coordinator_groups if self._seen_groups else None, groups)
            self.coordinator_groups = groups
            self._seen_groups = True
            if changes:
                self._on_changes(changes)
        if records:
            changes = self.transactions.apply(records)
            if changes:
                self._on_changes(changes)

    def transaction_coordinators(self) -> dict[int, int]:
        """``{partition of __transaction_state: its leader}``: each id's coordinator."""
        info = self._model.topics.get("__transaction_state")
        return {p: s.leader for p, s in info.states.items()} if info else {}
