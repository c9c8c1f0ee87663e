import pytest

from kafkalite.server.partition import can_rejoin_isr, compute_high_watermark, lagging_replicas


@pytest.mark.parametrize("leader_leo,isr,leos,expected", [
    (10, [1], {}, 10),                      # alone in the ISR: HW = LEO
    (10, [1, 2, 3], {2: 10, 3: 10}, 10),
    (10, [1, 2, 3], {2: 7, 3: 9}, 7),       # the slowest ISR member bounds the HW
    (10, [1, 2], {2: 7, 3: 0}, 7),          # out-of-sync replica 3 does not hold it back
    (10, [1, 2], {2: 0}, 0),                # nothing heard from 2 yet
    (10, [1, 2, 33], {2: 10}, 10),          # 33 is in no replica list: it holds nothing back
])
def test_high_watermark_is_min_leo_over_isr(leader_leo, isr, leos, expected):
    assert compute_high_watermark(leader_leo, isr, leos, leader_id=1) == expected


@pytest.mark.parametrize("caught_up,now,max_lag,expected", [
    ({2: 1000, 3: 1000}, 1500, 1000, set()),
    ({2: 1000, 3: 100}, 1500, 1000, {3}),
    ({2: 0, 3: 0}, 2000, 1000, {2, 3}),
    ({2: 1000}, 2000, 1000, set()),          # exactly at the limit stays
])
def test_lagging_replicas(caught_up, now, max_lag, expected):
    assert lagging_replicas([1, 2, 3], 1, caught_up, now, max_lag) == expected


@pytest.mark.parametrize("leo,hw,epoch_start,expected", [
    (10, 10, 0, True), (9, 10, 0, False), (12, 10, 11, True), (10, 10, 11, False)])
def test_rejoin_once_at_high_watermark_of_this_epoch(leo, hw, epoch_start, expected):
    assert can_rejoin_isr(leo, hw, epoch_start) is expected
