from twisted.internet.task import Clock

from kafkalite.server.purgatory import DelayedOperation, Purgatory


class WaitFor(DelayedOperation):
    def __init__(self, timeout_ms, state, target):
        super().__init__(timeout_ms)
        self.state, self.target = state, target

    def try_complete(self):
        return self.state["value"] >= self.target

    def on_complete(self, timed_out):
        return ("timed out" if timed_out else "done", self.state["value"])


def _results(d):
    out = []
    d.addCallback(out.append)
    return out


def test_completes_at_once_when_condition_holds():
    purgatory = Purgatory("p", Clock())
    result = _results(purgatory.try_complete_else_watch(WaitFor(100, {"value": 5}, 1), ["k"]))
    assert result == [("done", 5)] and purgatory.watched() == 0


def test_completes_when_checked_after_the_condition_changes():
    clock, state = Clock(), {"value": 0}
    purgatory = Purgatory("p", clock)
    result = _results(purgatory.try_complete_else_watch(WaitFor(1000, state, 3), ["a", "b"]))
    state["value"] = 2
    assert purgatory.check("a") == 0 and result == []
    state["value"] = 3
    assert purgatory.check("b") == 1
    assert result == [("done", 3)]
    clock.advance(5)  # the timer was cancelled: no second completion
    assert result == [("done", 3)]
    assert purgatory.check("a") == 0


def test_times_out_exactly_once():
    clock, state = Clock(), {"value": 0}
    purgatory = Purgatory("p", clock)
    result = _results(purgatory.try_complete_else_watch(WaitFor(500, state, 1), ["k"]))
    clock.advance(0.499)
    assert result == []
    clock.advance(0.001)
    assert result == [("timed out", 0)]
    state["value"] = 1
    assert purgatory.check("k") == 0 and purgatory.watched() == 0


def test_complete_all_answers_waiters_now():
    clock = Clock()
    purgatory = Purgatory("p", clock)
    result = _results(purgatory.try_complete_else_watch(WaitFor(500, {"value": 0}, 1), ["k"]))
    purgatory.complete_all("k")
    assert result == [("done", 0)]


def test_errors_in_on_complete_reach_the_deferred():
    class Broken(WaitFor):
        def on_complete(self, timed_out):
            raise ValueError("boom")

    purgatory = Purgatory("p", Clock())
    failures = []
    purgatory.try_complete_else_watch(Broken(1, {"value": 1}, 0), ["k"]).addErrback(
        failures.append)
    assert failures and failures[0].check(ValueError)


def test_a_negative_timeout_expires_at_once_instead_of_failing():
    clock = Clock()
    purgatory = Purgatory("p", clock)
    result = _results(purgatory.try_complete_else_watch(WaitFor(-5, {"value": 0}, 1), ["k"]))
    assert result == []
    clock.advance(0)
    assert result == [("timed out", 0)] and purgatory.watched() == 0


def test_a_fetch_completed_through_one_key_does_not_stay_listed_under_its_idle_ones():
    # a follower's fetch watches every partition it follows; a produce to one of them completes
    # it: under steady traffic the idle partitions' lists must not keep every completed fetch
    from kafkalite.server.purgatory import PURGE_MIN_ENTRIES

    clock, state = Clock(), {"value": 0}
    purgatory = Purgatory("p", clock)
    for n in range(1, 5 * PURGE_MIN_ENTRIES):
        done = _results(purgatory.try_complete_else_watch(WaitFor(500, state, n),
                                                           ["hot", "idle-1", "idle-2"]))
        state["value"] = n
        assert purgatory.check("hot") == 1 and done == [("done", n)]
        clock.advance(0)             # the reactor's next turn, where a purge runs
        if n % 97 == 0:
            assert purgatory.listed() <= 2 * PURGE_MIN_ENTRIES
    assert purgatory.watched() == 0
    purgatory.purge_completed()
    assert purgatory.listed() == 0


def test_a_purge_keeps_waiting_operations_and_runs_outside_checks():
    from kafkalite.server.purgatory import PURGE_MIN_ENTRIES

    clock, state = Clock(), {"value": 0}
    purgatory = Purgatory("p", clock)
    waiting = _results(purgatory.try_complete_else_watch(WaitFor(10_000, state, 10**9),
                                                         ["a", "b"]))
    for n in range(1, PURGE_MIN_ENTRIES):
        purgatory.try_complete_else_watch(WaitFor(500, state, n), ["a", "b"])
        state["value"] = n
        purgatory.check("a")
    assert purgatory.listed() >= PURGE_MIN_ENTRIES      # not purged yet: no reactor turn
    clock.advance(0)
    assert purgatory.listed() == 2 and purgatory.watched() == 1
    state["value"] = 10**9
    assert purgatory.check("b") == 1 and waiting == [("done", 10**9)]


def test_purges_grow_apart_with_the_number_of_live_watches():
    # a purge walks every entry: with many live operations it waits for as many new entries,
    # so its cost stays a constant per watch
    from kafkalite.server.purgatory import PURGE_MIN_ENTRIES

    clock = Clock()
    purgatory = Purgatory("p", clock)
    for n in range(PURGE_MIN_ENTRIES):
        purgatory.try_complete_else_watch(WaitFor(10_000, {"value": 0}, 1), [n])
    clock.advance(0)                 # a purge, which drops nothing
    assert purgatory.listed() == PURGE_MIN_ENTRIES
    for n in range(PURGE_MIN_ENTRIES, 2 * PURGE_MIN_ENTRIES - 1):
        purgatory.try_complete_else_watch(WaitFor(10_000, {"value": 0}, 1), [n])
    assert not clock.getDelayedCalls() or all(c.getTime() > 0 for c in clock.getDelayedCalls())
    assert purgatory._purge_call is None     # the next purge waits for 2 x the live entries


def test_check_soon_runs_on_the_next_turn_once_per_key():
    clock, state = Clock(), {"value": 0}
    purgatory = Purgatory("p", clock)
    checks = []
    real_check = purgatory.check
    purgatory.check = lambda key: checks.append(key) or real_check(key)
    result = _results(purgatory.try_complete_else_watch(WaitFor(1000, state, 1), ["k"]))
    state["value"] = 1
    purgatory.check_soon("k")
    purgatory.check_soon("k")
    purgatory.check_soon("nobody-watches")
    assert result == [] and checks == []      # not inside the caller's turn
    clock.advance(0)
    assert result == [("done", 1)] and checks == ["k"]
    clock.advance(0)
    assert checks == ["k"]


def test_check_soon_without_watchers_schedules_nothing():
    clock = Clock()
    purgatory = Purgatory("p", clock)
    purgatory.check_soon("k")
    assert clock.getDelayedCalls() == []


def test_check_with_a_predicate_leaves_the_others_waiting_untested():
    state = {"value": 1}
    purgatory = Purgatory("p", Clock())
    first, second = WaitFor(1000, state, 5), WaitFor(1000, state, 5)
    results = [_results(purgatory.try_complete_else_watch(op, ["k"])) for op in (first, second)]
    state["value"] = 5
    assert purgatory.check("k", lambda op: op is second) == 1
    assert results == [[], [("done", 5)]]
    assert purgatory.check("k") == 1 and results[0] == [("done", 5)]
