"""The CI gate of ``goldmine eval run``: exit non-zero, with one clear line, when a metric falls
under a floor (``--fail-under recall@5=0.70``) or the run is worse than a reference run by the
compare's verdict (``--fail-if-worse-than RUN``: outside the noise, not any drop).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from goldmine.eval.metrics import parse_metric

from goldmine.errors import InputError

if TYPE_CHECKING:
    from goldmine.eval.runner import EvalOutcome

EXIT_GATE = 1


def parse_floors(items: list[str]) -> dict[str, float]:
    """``["recall@5=0.70", "mrr=0.5"]`` -> ``{"recall@5": 0.7, "mrr": 0.5}``."""
    floors: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise InputError(f"--fail-under takes METRIC=VALUE, e.g. recall@5=0.70; got {item!r}")
        try:
            floors[parse_metric(name).name] = float(value)
        except ValueError:
            raise InputError(f"--fail-under {item!r}: {value!r} is not a number") from None
    return floors


@dataclass
class Gate:
    floors: dict[str, float] = field(default_factory=dict)
    worse_than: str | None = None

    @classmethod
    def parse(cls, fail_under: list[str], worse_than: str | None) -> Gate:
        return cls(parse_floors(fail_under), worse_than)

    def metrics(self) -> list[str]:
        """Metrics the gate needs scored beside the ones asked for."""
        return list(self.floors)

    def failures(self, outcome: EvalOutcome, db: Path | None) -> list[str]:
        summary = outcome.result.summary
        lines = [
            f"gate failed: {name} {summary[name]:.4f} is under {floor:.4f}"
            for name, floor in self.floors.items()
            if summary[name] < floor
        ]
        if self.worse_than is not None:
            lines.extend(self._compare(outcome, db))
        return lines

    def _compare(self, outcome: EvalOutcome, db: Path | None) -> list[str]:
        from goldmine.eval.compare import compare_runs
        from goldmine.eval.store import find_run, run_scores

        from goldmine.store import open_store

        with open_store(db) as con:
            reference = find_run(con, self.worse_than or "")
            base = run_scores(con, reference["run_id"])
        comparison = compare_runs(
            base,
            outcome.result.per_query,
            [m.name for m in outcome.result.metrics],
            label_a=reference["label"] or f"run {reference['run_id']}",
            label_b=outcome.label or "this run",
        )
        return [
            f"gate failed: {name} is worse than {self.worse_than} "
            f"(delta {m['delta']:+.4f}, p {m['p_value']:.4f})"
            for name, m in comparison.to_json()["metrics"].items()
            if m["verdict"] == "worse"
        ]

    def enforce(self, outcome: EvalOutcome, db: Path | None) -> None:
        lines = self.failures(outcome, db)
        if lines:
            for line in lines:
                print(line, file=sys.stderr)
            raise SystemExit(EXIT_GATE)
