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
