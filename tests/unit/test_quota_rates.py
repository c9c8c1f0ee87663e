"""The sampled rate and throttle time of client quotas against Kafka 2.8's own numbers
(``ClientQuotaManagerTest.testQuotaViolation``, ``RateTest``/``SampledStat`` behaviour)."""

from __future__ import annotations

import pytest

from kafkalite.server.quota_rates import SampledRate, throttle_time_ms


def test_kafkas_quota_violation_case_gives_its_throttle_time():
    # ClientQuotaManagerTest.testQuotaViolation: quota 500 B/s, 400 B every second for 10 s,
    # then 2300 B half a second later: 6300 B over 10.5 s = 600 B/s -> (600-500)/500*10.5 s
    rate = SampledRate(11, 1000)
    for second in range(10):
        rate.record(400, second * 1000)
        assert rate.measure(second * 1000) <= 500
    rate.record(2300, 10500)
    measured = rate.measure(10500)
    assert measured == pytest.approx(600.0)
    assert throttle_time_ms(rate, measured, 500, 10500) == 2100


def test_a_young_rate_is_divided_by_at_least_samples_minus_one_windows():
    rate = SampledRate(11, 1000)
    rate.record(5000, 0)
    assert rate.window_size_ms(0) == 10000
    assert rate.measure(0) == pytest.approx(500.0)
    # 2 full windows: the 500 ms of the third count, plus 8 whole windows (Rate.windowSize)
    assert rate.window_size_ms(2500) == 10500
    # bound 250/s: (500 - 250)/250 * 10 s
    assert throttle_time_ms(rate, rate.measure(0), 250, 0) == 10000


def test_windows_older_than_all_samples_count_for_nothing():
    rate = SampledRate(3, 1000)
    rate.record(900, 0)
    assert rate.measure(2999) == pytest.approx(900 / 2.999)
    assert rate.measure(3000) == 0.0                  # purged: samples * window old


def test_windows_are_reused_in_a_ring():
    rate = SampledRate(3, 1000)
    for t, value in ((0, 1), (1000, 10), (2000, 100), (3000, 1000)):
        rate.record(value, t)
    # the window of t=0 was reused for t=3000: 10 + 100 + 1000 over 2 s (1000..3000)
    assert rate.measure(3000) == pytest.approx(1110 / 2.0)


def test_a_negative_record_takes_a_value_back():
    rate = SampledRate()
    rate.record(4000, 0)
    rate.record(-4000, 10)
    assert rate.measure(10) == 0.0


def test_rounding_is_javas_half_up():
    rate = SampledRate(11, 1000)
    rate.record(1, 0)
    # (1.00005 - 1) / 1 * 10000 = 0.5 ms -> 1 (Math.round), not banker's 0
    assert throttle_time_ms(rate, 1.00005, 1.0, 0) == 1
