"""Runs scored under two sides' grades, and whether the sides rank them alike.

Both ways of asking "would these grades pick the same system?" go through here: the model judge
against people (``judge.rank_systems``) and any two sources (``sources.systems``). It lives apart
from both so neither imports the other, and it takes eval's metric as a value, so the gold set
needs no eval code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from goldmine.gold import Run


def score_runs(
    runs: list[Run], m: Any, sides: dict[str, dict[str, dict[str, int]]], queries: list[str]
) -> tuple[list[dict], float | None]:
    """Each run's mean metric ``m`` over ``queries`` under each side's judgments (side ->
    query -> chunk -> grade), and Kendall's tau between the first two sides' orderings of the
    runs (None when there is nothing to order, or every run tied on a side)."""
    from scipy.stats import kendalltau

    n = len(queries) or 1
    rows = [
        {"run": run.source}
        | {
            side: sum(m(run.results.get(q, []), judged.get(q, {}), 1) for q in queries) / n
            for side, judged in sides.items()
        }
        for run in runs
    ]
    first, second = list(sides)[:2]
    tau = None
    if queries and len(rows) >= 2:
        value = kendalltau([r[first] for r in rows], [r[second] for r in rows]).statistic
        tau = None if value != value else float(value)  # NaN: every run tied
    return rows, tau
