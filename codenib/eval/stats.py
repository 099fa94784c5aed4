"""Paired significance tests of two runs' per-query values (t-test and sign-flip randomization),
and the confidence margin of a mean."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True, slots=True)
class PairedTest:
    """Paired comparison of per-query values a and b (delta = mean(a) - mean(b))."""

    n: int
    mean_a: float
    mean_b: float
    delta: float
    t_statistic: float
    t_p: float            # two-sided paired t-test
    permutation_p: float  # two-sided sign-flip randomization test on the mean difference
    permutations: int
    exact: bool           # all 2**n sign flips enumerated
    wins: int             # queries where a > b
    losses: int
    ties: int


def paired_test(a: Sequence[float], b: Sequence[float], *, permutations: int = 10_000,
                seed: int = 0, weights: Sequence[float] | None = None) -> PairedTest:
    """Paired t-test and sign-flip randomization test of mean(a) - mean(b).

    The randomization test enumerates all 2**n sign flips when that is no more than
    `permutations`, and otherwise samples `permutations` of them (p = (hits + 1) / (N + 1)).
    `weights` (one per query, mean 1: `group_weights`) scale each query's pair before testing,
    so that the means and their difference are weighted means.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError("paired_test needs two sequences of the same length")
    return paired_tests(x[:, None], y[:, None], permutations=permutations, seed=seed, weights=weights)[0]


def group_weights(groups: Sequence[str]) -> np.ndarray:
    """Per-query weights N / (G x n_g) of queries in groups (repositories): the weighted mean of
    any per-query values is the mean over the G groups of each group's mean."""
    n = Counter(groups)
    return np.array([len(groups) / (len(n) * n[g]) for g in groups], dtype=float)


def paired_tests(a: np.ndarray, b: np.ndarray, *, permutations: int = 10_000,
                 seed: int = 0, weights: Sequence[float] | None = None) -> list[PairedTest]:
    """`paired_test` for each column of two (queries x measures) arrays, sharing the sign flips."""
    from scipy import stats

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if weights is not None:
        w = np.asarray(weights, dtype=float)
        if w.shape != (x.shape[0],):
            raise ValueError("paired_tests needs one weight per query")
        x, y = x * w[:, None], y * w[:, None]
    d = x - y
    n, m = d.shape
    if n == 0:
        return [PairedTest(0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, 0, True, 0, 0, 0)
                for _ in range(m)]
    perm_p, used, exact = _sign_flip_p(d, permutations, seed)
    out = []
    for j in range(m):
        dj = d[:, j]
        delta = float(dj.mean())
        spread = float(dj.std(ddof=1)) if n > 1 else 0.0
        if n < 2:
            t, t_p = math.nan, math.nan
        elif spread <= 1e-12 * max(1.0, abs(delta)):
            # A constant difference (up to float noise): scipy answers NaN or noise here, while
            # the limit is clear: no difference at all, or a certain one.
            t, t_p = (0.0, 1.0) if abs(delta) <= 1e-12 else (math.copysign(math.inf, delta), 0.0)
        else:
            res = stats.ttest_rel(x[:, j], y[:, j])
            t, t_p = float(res.statistic), float(res.pvalue)
        out.append(PairedTest(n=n, mean_a=float(x[:, j].mean()), mean_b=float(y[:, j].mean()),
                              delta=delta, t_statistic=t, t_p=t_p, permutation_p=float(perm_p[j]),
                              permutations=used, exact=exact, wins=int((dj > 0).sum()),
                              losses=int((dj < 0).sum()), ties=int((dj == 0).sum())))
    return out


def mean_margin(values: Sequence[float], level: float = 0.95) -> float:
    """Half-width of the Student t confidence interval of the mean of independent values (such
    as per-repository means): mean +- margin covers the true mean at `level`.

    NaN values are skipped; NaN for fewer than two values, 0 when they are all equal.
    """
    from scipy import stats

    if not 0.0 < level < 1.0:
        raise ValueError(f"mean_margin needs a level between 0 and 1, not {level}")
    x = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    if x.size < 2:
        return math.nan
    spread = float(x.std(ddof=1))
    if spread <= 1e-12 * max(1.0, abs(float(x.mean()))):
        return 0.0
    return float(stats.t.ppf(0.5 + level / 2.0, x.size - 1)) * spread / math.sqrt(x.size)


# --- private helpers --------------------------------------------------------------------

def _sign_flip_p(d: np.ndarray, permutations: int, seed: int) -> tuple[np.ndarray, int, bool]:
    """Two-sided sign-flip p-value of each column's mean of `d` (queries x measures)."""
    n = d.shape[0]
    observed = np.abs(d.mean(axis=0))
    threshold = observed - 1e-12 * np.maximum(1.0, observed)  # float noise must not turn a tie into a miss
    if n <= 20 and 2 ** n <= permutations:
        signs = (((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1).astype(float)
        means = np.abs(signs @ d) / n
        return (means >= threshold).mean(axis=0), 2 ** n, True
    rng = np.random.default_rng(seed)
    hits = np.zeros(d.shape[1])
    done = 0
    while done < permutations:
        batch = min(1000, permutations - done)  # bounded memory for large query sets
        signs = rng.integers(0, 2, size=(batch, n)).astype(float) * 2 - 1  # float: BLAS matmul
        hits += (np.abs(signs @ d) / n >= threshold).sum(axis=0)
        done += batch
    return (hits + 1) / (permutations + 1), permutations, False
