"""server.gc_policy: the broker freezes its start-up objects after one collection."""

from kafkalite.server.gc_policy import freeze_startup_objects


class FakeGc:
    def __init__(self):
        self.calls = []

    def collect(self):
        self.calls.append("collect")

    def freeze(self):
        self.calls.append("freeze")

    def get_freeze_count(self):
        return 1234


def test_collects_then_freezes():
    fake = FakeGc()
    assert freeze_startup_objects(fake) == 1234
    # garbage from start-up is collected first, not frozen for the process's life
    assert fake.calls == ["collect", "freeze"]
