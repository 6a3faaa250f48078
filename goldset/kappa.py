"""Agreement figures of two graders, computed from confusion matrices.

Every figure ``gold agreement`` prints (linear-weighted kappa on the 0/1/2 grades, kappa of
relevant-or-not, raw agreement) is a function of the 3x3 confusion matrix. Each query's matrix is
counted once; a bootstrap round over queries is then a weighted sum of those matrices (how many
times each query was drawn), so a thousand rounds are one matrix product instead of a thousand
passes over the units, and two 10,000-judgment sources compare in milliseconds. The formulas
are Cohen's (scikit-learn's ``cohen_kappa_score`` gives the same values; the tests hold them to
it).

A figure needs enough units to mean anything: under ``TOO_FEW`` it is reported as "too few to
say", and a kappa whose interval holds 0 as "no better than chance".

A pair's report (``matrix_report``: the figures and the named matrix) is built here once: the
model judge, the raters and ``sources.compare`` all give it, and none of them imports another
for it.
"""

from __future__ import annotations

from math import ceil
from typing import Any

import numpy as np

GRADES = 3  # 0, 1, 2
BOOTSTRAP_ROUNDS = 1000
TOO_FEW = 10  # fewer units (or queries) than this: a figure is not worth reading


def confusions(queries: np.ndarray, a: np.ndarray, b: np.ndarray, n_queries: int) -> np.ndarray:
    """Per query, the counts of (grade of ``a``, grade of ``b``): shape (n_queries, 3, 3).
    ``queries`` numbers each unit's query 0..n_queries-1."""
    cell = (queries.astype(np.int64) * GRADES + a) * GRADES + b
    counts = np.bincount(cell, minlength=n_queries * GRADES * GRADES)
    return counts.reshape(n_queries, GRADES, GRADES)


def relevant(conf: np.ndarray, relevant_from: int) -> np.ndarray:
    """The (..., 3, 3) matrices folded to (..., 2, 2): not relevant / relevant at the threshold."""
    low, high = slice(0, relevant_from), slice(relevant_from, GRADES)
    rows = np.stack([conf[..., low, :].sum(-2), conf[..., high, :].sum(-2)], axis=-2)
    return np.stack([rows[..., low].sum(-1), rows[..., high].sum(-1)], axis=-1)


def kappa(conf: np.ndarray, weighted: bool) -> np.ndarray:
    """Cohen's kappa of each (..., k, k) matrix, linear-weighted or not; NaN where it is
    undefined (both sides used one and the same category: no disagreement was possible)."""
    k = conf.shape[-1]
    i, j = np.indices((k, k))
    w = np.abs(i - j) / (k - 1) if weighted else (i != j).astype(float)
    n = conf.sum((-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = conf.sum(-1)[..., :, None] * conf.sum(-2)[..., None, :] / n[..., None, None]
        observed = (w * conf).sum((-2, -1))
        chance = (w * expected).sum((-2, -1))
        return np.where(chance > 0, 1 - observed / chance, np.nan)


def agreement(conf: np.ndarray) -> np.ndarray:
    """Raw agreement: the share of units on the diagonal."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.trace(conf, axis1=-2, axis2=-1) / conf.sum((-2, -1))


def resample(per_query: np.ndarray, rounds: int = BOOTSTRAP_ROUNDS, seed: int = 0):
    """``rounds`` bootstrap samples of the queries, each as its summed matrix: (rounds, k, k);
    None when there are fewer than two queries (nothing to resample)."""
    n = per_query.shape[0]
    if n < 2:
        return None
    picks = np.random.default_rng(seed).integers(0, n, size=(rounds, n))
    # How many times each round drew each query, then the rounds' summed matrices as one product.
    drawn = np.bincount((picks + n * np.arange(rounds)[:, None]).ravel(), minlength=rounds * n)
    summed = drawn.reshape(rounds, n).astype(float) @ per_query.reshape(n, -1).astype(float)
    return summed.reshape(rounds, *per_query.shape[1:])


def interval(values: np.ndarray | None) -> list[float] | None:
    """The 95% percentile interval of bootstrap values; None when fewer than half the rounds
    gave a value (most resamples had a single category, so the figure was undefined)."""
    if values is None:
        return None
    kept = values[~np.isnan(values)]
    if len(kept) < len(values) // 2:
        return None
    low, high = np.percentile(kept, [2.5, 97.5])
    return [float(low), float(high)]


def value(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def figures(per_query: np.ndarray, relevant_from: int = 1, seed: int = 0) -> dict:
    """Weighted and relevant-or-not kappa, raw agreement and their intervals, from the
    per-query confusion matrices."""
    total = per_query.sum(0)
    samples = resample(per_query, seed=seed)
    folded = relevant(total, relevant_from)
    return {
        "kappa_weighted": value(kappa(total, True)),
        "kappa_weighted_ci95": interval(None if samples is None else kappa(samples, True)),
        "kappa_relevant": value(kappa(folded, False)),
        "kappa_relevant_ci95": interval(
            None if samples is None else kappa(relevant(samples, relevant_from), False)
        ),
        "observed_agreement": value(agreement(total)),
        "observed_agreement_ci95": interval(None if samples is None else agreement(samples)),
    }


def reading(value: float | None, ci: list[float] | None, n: int, *,
            chance: float | None = 0.0, queries: int | None = None) -> str:  # fmt: skip
    """What a figure on ``n`` units (from ``queries`` queries, the bootstrap's unit) can be
    taken to say: too few to say, undefined, no better than chance (its interval holds
    ``chance``: 0 for a kappa, 0.5 for an AUC; None: no such test), or nothing to add."""
    if n < TOO_FEW:
        return f"n={n}: too few to say"
    if queries is not None and queries < TOO_FEW:
        return f"{queries} queries: too few to say"
    if value is None:
        return "undefined: both sides gave one and the same grade throughout"
    if ci is None:
        return "no interval: fewer than two queries to resample, or most resamples held one grade"
    if chance is not None and ci[0] <= chance <= ci[1]:
        return "no better than chance"
    return ""


def units_needed(width: float = 0.2, ci: list[float] | None = None, n: int = 0, *,
                 kappa_value: float = 0.6, chance: float = 0.5) -> int:  # fmt: skip
    """How many units a kappa's 95% interval needs to be narrower than ``width``. From a
    measured interval ``ci`` on ``n`` units: its width shrinks as 1/sqrt(n). With none: Cohen's
    large-sample standard error sqrt(p_o (1 - p_o) / n) / (1 - p_e) at a kappa of
    ``kappa_value`` and chance agreement ``chance`` (a bootstrap over queries is wider: a floor)."""
    if ci is not None and n:
        return max(n, ceil(n * ((ci[1] - ci[0]) / width) ** 2))
    observed = kappa_value * (1 - chance) + chance
    return ceil((2 * 1.96 / width) ** 2 * observed * (1 - observed) / (1 - chance) ** 2)


# The mean grade gap under which neither side is called the more lenient.
LENIENT_GAP = 0.05


def confusion(per_query: np.ndarray, rows: str, columns: str) -> dict[str, Any]:
    """The matrix with its sides named, each grade's share on each side, and which side grades
    higher on the same units (the more lenient)."""
    total = per_query.sum(0)
    n = int(total.sum())
    share_rows = (total.sum(1) / n).tolist() if n else [0.0] * 3
    share_cols = (total.sum(0) / n).tolist() if n else [0.0] * 3
    mean_rows = sum(g * s for g, s in enumerate(share_rows))
    mean_cols = sum(g * s for g, s in enumerate(share_cols))
    # A twentieth of a grade apart on average, at least: one unit apart in 150 (the same
    # shares to the percent) was called "the more lenient".
    lenient = None if abs(mean_rows - mean_cols) < LENIENT_GAP else (
        rows if mean_rows > mean_cols else columns)  # fmt: skip
    return {
        "rows": rows,
        "columns": columns,
        "grades": [0, 1, 2],
        "counts": total.astype(int).tolist(),
        "shares": {rows: share_rows, columns: share_cols},
        "more_lenient": lenient,
    }


def pair_report(pairs: list[tuple[str, int, int]], rows: str, columns: str) -> dict[str, Any]:
    """Agreement of two graders over (query, grade of ``rows``, grade of ``columns``) triples:
    weighted and relevant-or-not kappa with their intervals, and the confusion matrix."""
    names = sorted({q for q, _, _ in pairs})
    number = {q: i for i, q in enumerate(names)}
    q = np.array([number[q] for q, _, _ in pairs], dtype=np.int64)
    a = np.array([x for _, x, _ in pairs], dtype=np.int64)
    b = np.array([y for _, _, y in pairs], dtype=np.int64)
    report = matrix_report(confusions(q, a, b, len(names)), rows, columns)
    return {"n_items": len(names), "n_pairs": len(pairs), **report}


def matrix_report(
    per_query: np.ndarray, rows: str, columns: str, relevant_from: int = 1
) -> dict[str, Any]:
    """The figures of two graders and their named matrix (``confusion``), which carries the raw
    agreement's interval as ``gold agreement`` prints it beside the counts."""
    found = figures(per_query, relevant_from)
    table = confusion(per_query, rows, columns)
    table["observed_agreement_ci95"] = found.pop("observed_agreement_ci95")
    return {**found, "confusion": table}
