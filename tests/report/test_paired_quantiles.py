"""The paired interval's t quantiles that report/paired.py holds (so a terminal table imports no scipy)
are scipy's, and the interval is the textbook one."""

from __future__ import annotations

import math

import pytest
from scipy.stats import t

from benchmark.report.paired import CONFIDENCE, T_QUANTILES, paired_interval, t_quantile


@pytest.mark.parametrize("df", range(1, len(T_QUANTILES) + 3))
def test_each_quantile_is_scipys(df):
    assert t_quantile(df) == pytest.approx(t.ppf(0.5 + CONFIDENCE / 2, df), rel=1e-13)


def test_the_interval_of_three_differences():
    mean, low, high = paired_interval([1.0, 2.0, 4.0])
    half = t.ppf(0.975, 2) * math.sqrt(7 / 3) / math.sqrt(3)
    assert (mean, low, high) == pytest.approx((7 / 3, 7 / 3 - half, 7 / 3 + half), rel=1e-13)
