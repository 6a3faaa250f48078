"""What scoring returns: the per-query values, the averages and the counts around them.

Both engines build an ``EvalResult`` (``goldmine.eval.scoring``'s Python loop,
``goldmine.eval.columnar``'s polars frame), and ``goldmine.eval.runner`` wraps it with its sources
in an ``EvalOutcome`` that the store, the history file and the report read. They live apart from
all of these so that neither engine imports the other to name its result and the report, history
and store name the outcome without the runner: eval is a line, read -> score -> report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from goldmine.gold import Gold
from goldmine.metrics import Metric


@dataclass
class NoAnswerResult:
    query_id: str
    query: str | None
    returned: int
    top_score: float | None
    abstained: bool


@dataclass
class EvalResult:
    metrics: list[Metric]
    summary: dict[str, float]
    per_query: dict[str, dict[str, float]]
    rel_level: int
    n_queries: int
    missing: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    no_answer: list[NoAnswerResult] = field(default_factory=list)
    n_duplicates: int = 0
    errors: dict[str, str] = field(default_factory=dict)
    returned: dict[str, int] = field(default_factory=dict)
    # The per-query table as a polars frame (qid + one column per metric), from the columnar
    # engine: the store writes it through Arrow instead of row by row.
    frame: Any = None

    @property
    def abstention_rate(self) -> float | None:
        if not self.no_answer:
            return None
        return sum(r.abstained for r in self.no_answer) / len(self.no_answer)

    def to_json(self) -> dict:
        return {
            "metrics": self.summary,
            "n_queries": self.n_queries,
            "n_missing": len(self.missing),
            "n_ignored": len(self.ignored),
            "n_no_answer": len(self.no_answer),
            "n_duplicates": self.n_duplicates,
            "n_errors": len(self.errors),
            "rel_level": self.rel_level,
            "abstention_rate": self.abstention_rate,
            "missing": self.missing,
            "ignored": self.ignored,
            "errors": self.errors,
            "no_answer": [r.__dict__ for r in self.no_answer],
            "per_query": self.per_query,
        }


def abstention(
    qid: str,
    text: str | None,
    ranked: list[str] | None,
    scores: list[float] | None,
    abstain_below: float | None,
) -> NoAnswerResult:
    returned = len(ranked or [])
    top = max(scores) if scores else None
    abstained = returned == 0 or (
        abstain_below is not None and top is not None and top < abstain_below
    )
    return NoAnswerResult(qid, text, returned, top, abstained)


@dataclass
class EvalOutcome:
    result: EvalResult
    gold: Gold
    run_source: str
    run_format: str | None
    run_hash: str | None
    label: str | None
    run_id: int | None = None
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    git_commit: str | None = None
    reranker: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = self.result.to_json()
        data.update(
            {
                "run_id": self.run_id,
                "label": self.label,
                "created_at": self.created_at.isoformat(),
                "git_commit": self.git_commit,
                "gold": {
                    "source": self.gold.source,
                    "format": self.gold.format,
                    "version": self.gold.version,
                    "hash": self.gold.hash,
                    "n_queries": len(self.gold.queries),
                },
                "run": {
                    "source": self.run_source,
                    "format": self.run_format,
                    "hash": self.run_hash,
                },
                "reranker": self.reranker,
                "warnings": self.warnings,
            }
        )
        return data
