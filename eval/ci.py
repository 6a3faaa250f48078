"""Runs the CI gate for ``goldmine eval run`` (the checks themselves are in ``gate``): exit 1
with one line per failure when a metric falls under a floor or the run is worse than a reference.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from goldmine.eval.gate import check_fail_under, parse_fail_under, worse_than

if TYPE_CHECKING:
    from goldmine.eval.runner import EvalOutcome

EXIT_GATE = 1


@dataclass
class Gate:
    floors: dict[str, float] = field(default_factory=dict)
    reference: str | None = None

    @classmethod
    def parse(cls, fail_under: list[str], reference: str | None) -> Gate:
        return cls(parse_fail_under(fail_under), reference)

    def metrics(self) -> list[str]:
        """Metrics the gate needs scored beside the ones asked for."""
        return list(self.floors)

    def failures(self, outcome: EvalOutcome, db: Path | None) -> list[str]:
        lines = check_fail_under(outcome.result.summary, self.floors)
        if self.reference is not None:
            from goldmine.store import open_store

            with open_store(db) as con:
                worse = worse_than(outcome, self.reference, con, gold=outcome.gold)
            if worse:
                lines.append(worse)
        return lines

    def enforce(self, outcome: EvalOutcome, db: Path | None) -> None:
        lines = self.failures(outcome, db)
        for line in lines:
            print(f"gate failed: {line}", file=sys.stderr)
        if lines:
            raise SystemExit(EXIT_GATE)
