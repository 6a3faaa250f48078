"""The statistics of a paired comparison: sign-flip test, bootstrap interval, Holm, the detectable
effect.

What each computes and why is in ``goldmine.eval.compare``'s docstring. Both resampling loops are
vectorised and chunked (``_CHUNK`` rows at a time) so memory stays small: the sign-flip test reads
random bytes and a 256-entry table of partial sums per group of eight queries, so 10,000
permutations of 7,000 queries are ~9 M table look-ups, not a 7,000 x 10,000 matrix product.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

POWER = 0.80
_CHUNK = 1000
# 0/1 bit patterns of every byte, most significant bit first (np.unpackbits' order).
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float64)


def sign_flip_test(
    deltas: np.ndarray, permutations: int = 10_000, seed: int = 0
) -> tuple[float, bool]:
    """Two-sided paired randomization test of mean(deltas) = 0; returns (p, exact).

    Zero deltas are dropped first: flipping their sign changes nothing.
    """
    d = np.asarray(deltas, dtype=np.float64)
    d = d[d != 0]
    m = d.size
    total = float(d.sum())
    # A flip pattern "reaches" the observed statistic when its |sum| >= |observed sum|; the
    # tolerance keeps the observed pattern itself (and its mirror) counted despite rounding.
    threshold = abs(total) - 1e-9 * float(np.abs(d).sum())
    if m == 0:
        return 1.0, True
    if 2**m <= permutations:
        patterns = np.arange(2**m, dtype=np.uint32)
        bits = ((patterns[:, None] >> np.arange(m, dtype=np.uint32)) & 1).astype(np.float64)
        sums = 2 * (bits @ d) - total
        return float(np.count_nonzero(np.abs(sums) >= threshold)) / 2**m, True
    rng = np.random.default_rng(seed)
    groups = (m + 7) // 8
    padded = np.zeros(groups * 8)
    padded[:m] = d
    # table[g, byte] = 2 * (sum of the group's deltas whose bit is set): a flip pattern's signed
    # sum is sum_g table[g, byte_g] - total, i.e. +d where the bit is set, -d where it is not.
    table = (2 * (_BYTE_BITS @ padded.reshape(groups, 8).T)).T.ravel()
    offsets = np.arange(groups, dtype=np.int32) * 256
    count = 0
    done = 0
    while done < permutations:
        rows = min(_CHUNK, permutations - done)
        draws = rng.integers(0, 256, size=(rows, groups), dtype=np.uint8)
        sums = np.take(table, draws + offsets).sum(axis=1) - total
        count += int(np.count_nonzero(np.abs(sums) >= threshold))
        done += rows
    return (count + 1) / (permutations + 1), False


def bootstrap_ci(
    deltas: np.ndarray, resamples: int = 10_000, seed: int = 0, level: float = 0.95
) -> Any:
    """Percentile bootstrap interval of mean(deltas), queries resampled with replacement.

    ``deltas`` is one metric's (n,) array -> ``(low, high)``, or an (n, metrics) matrix -> a list
    of them; the metrics of a matrix share each resample of the queries (drawn once: the draws
    cost more than the sums).
    """
    d = np.asarray(deltas, dtype=np.float64)
    matrix = d.reshape(d.shape[0], -1)
    n, columns = matrix.shape
    if n == 0 or resamples < 1:
        nan = (math.nan, math.nan)
        return nan if d.ndim == 1 else [nan] * columns
    means = np.empty((resamples, columns))
    resampled: list[int] = []
    for j in range(columns):
        values, counts = np.unique(matrix[:, j], return_counts=True)
        if values.size <= 32 and values.size * 16 <= n:
            # Few distinct deltas (recall@k: -1, 0, 1): how often each is drawn is multinomial,
            # the same distribution as resampling indices, at a fraction of the cost (a few
            # binomial draws per resample instead of n index draws).
            rng = np.random.default_rng(seed)
            means[:, j] = rng.multinomial(n, counts / n, size=resamples) @ values / n
        else:
            resampled.append(j)
    if resampled:
        rng = np.random.default_rng(seed)
        cols = [np.ascontiguousarray(matrix[:, j]) for j in resampled]
        index_type = np.int32 if n < 2**31 else np.int64
        done = 0
        while done < resamples:
            rows = min(_CHUNK, resamples - done)
            draws = rng.integers(0, n, size=(rows, n), dtype=index_type)
            for j, col in zip(resampled, cols, strict=True):
                means[done : done + rows, j] = np.take(col, draws).sum(axis=1) / n
            done += rows
    tail = (1 - level) / 2 * 100
    bounds = np.percentile(means, [tail, 100 - tail], axis=0)
    intervals = [(float(bounds[0, j]), float(bounds[1, j])) for j in range(columns)]
    return intervals[0] if d.ndim == 1 else intervals


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error rate), in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def min_detectable_effect(sd: float, n: int, alpha: float = 0.05, power: float = POWER) -> float:
    """Smallest true mean delta a paired test on n queries detects with this power (normal)."""
    if n < 2:
        return math.inf
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    return z * sd / math.sqrt(n)
