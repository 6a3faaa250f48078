"""The CI gate as one pytest assertion: fail a test when a run is *worse* than its baseline.

``goldmine eval run --fail-if-worse-than`` fails a CI step only when ``eval compare`` calls the new
run worse (its Holm-corrected paired randomization test under ``alpha``), not on any drop: on
fifty queries a drop of a point is usually noise, and a gate that fails on noise gets switched
off. ``assert_no_regression`` is that gate inside a test suite, and its message is what a person
needs to act on the failure: the metric, the delta, the interval and the queries lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from goldmine.api import DEFAULT_METRICS, Compared, Evaluation, compare

if TYPE_CHECKING:
    from goldmine.inputs import GoldLike, RunLike

__all__ = ["assert_no_regression"]

# Lost queries named per metric in the message; the rest are counted.
SHOWN = 10


def assert_no_regression(
    gold: GoldLike,
    run: RunLike | Evaluation,
    baseline: RunLike | Evaluation,
    metrics: str | Sequence[str] = DEFAULT_METRICS,
    *,
    alpha: float = 0.05,
    rel_level: int = 1,
    permutations: int = 10_000,
    bootstrap: int = 10_000,
    seed: int = 0,
    k: int | None = None,
) -> Compared:
    """Raise ``AssertionError`` when ``run`` is worse than ``baseline`` on ``gold``.

    Worse means what ``goldmine eval compare`` means: the paired test's (Holm-corrected) p under
    ``alpha`` and the delta below 0. The message names each such metric with both means, the
    delta, its 95% interval and p, then the queries lost (baseline -> run). ``gold``, ``run`` and
    ``baseline`` take what ``goldmine.evaluate`` takes (a retriever is asked for ``k``). Returns
    the comparison when it passes.

    Example:
        >>> from goldmine.testing import assert_no_regression
        >>> def test_the_new_ranker_keeps_recall():                  # doctest: +SKIP
        ...     assert_no_regression("gold/v0003.jsonl", "runs/new.trec",
        ...                          baseline="runs/main.trec", metrics=["recall@5", "mrr"])
    """
    __tracebackhide__ = True  # pytest shows the assertion, not this frame
    compared = compare(gold, baseline, run, metrics, rel_level=rel_level,
                       permutations=permutations, bootstrap=bootstrap, seed=seed,
                       alpha=alpha, labels=("the baseline", "the run"), k=k)  # fmt: skip
    message = regression_message(compared)
    if message is not None:
        raise AssertionError(message)
    return compared


def regression_message(compared: Compared) -> str | None:
    """The gate's line (``goldmine.eval.gate.worse_line``) and, per worse metric, the queries
    the run lost, largest first; None when no metric is worse."""
    from goldmine.eval.gate import worse_line

    line = worse_line(compared.comparison)
    if line is None:
        return None
    lines = [f"the run is {line}"]
    for m in compared.metrics:
        if m.verdict != "worse":
            continue
        shown = ", ".join(f"{q.query_id} {q.a:.3f}->{q.b:.3f}" for q in m.lost[:SHOWN])
        more = f" and {m.losses - SHOWN} more" if m.losses > SHOWN else ""
        lines.append(f"{m.metric}: lost {m.losses} queries ({shown}{more}), won {m.wins}")
    return "\n".join(lines)
