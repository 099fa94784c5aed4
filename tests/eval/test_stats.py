"""`codenib.eval.stats.mean_margin`: hand-computed margins and scipy's own interval as oracle."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from codenib.eval.stats import mean_margin


def test_margins_computed_by_hand():
    # [0, 1]: sd 1/sqrt(2), standard error 1/2, t(0.975, 1 df) = 12.7062.
    assert mean_margin([0.0, 1.0]) == pytest.approx(12.7062 / 2, abs=1e-4)
    # [1, 2, 3, 4]: sd sqrt(5/3) = 1.29099, standard error 0.645497, t(0.975, 3 df) = 3.18245.
    assert mean_margin([1.0, 2.0, 3.0, 4.0]) == pytest.approx(3.18245 * 0.645497, abs=1e-4)
    # A 90% interval is narrower: t(0.95, 3 df) = 2.35336.
    assert mean_margin([1.0, 2.0, 3.0, 4.0], level=0.9) == pytest.approx(2.35336 * 0.645497, abs=1e-4)


def test_too_few_or_equal_values():
    assert math.isnan(mean_margin([]))
    assert math.isnan(mean_margin([0.4]))
    assert math.isnan(mean_margin([0.4, math.nan]))    # NaN (a repository without judged queries) is skipped
    assert mean_margin([0.5, math.nan, 0.5]) == 0.0
    with pytest.raises(ValueError, match="between 0 and 1"):
        mean_margin([0.1, 0.2], level=95)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=2, max_size=30),
       st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_the_margin_is_half_scipys_t_interval(values, level):
    from scipy import stats

    import numpy as np

    x = np.asarray(values)
    if x.std(ddof=1) <= 1e-12:
        assert mean_margin(values, level) == 0.0
        return
    lo, hi = stats.t.interval(level, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert mean_margin(values, level) == pytest.approx((hi - lo) / 2, rel=1e-9, abs=1e-12)
    assert mean_margin(values, 0.99) >= mean_margin(values, 0.8)
