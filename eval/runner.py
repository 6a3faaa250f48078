"""One eval run end to end: load the gold set, get the run, score it, keep it.

Everything that can fail on input (metric names, the gold file, the run file, the history file's
header) is checked before anything is written, so a failed eval leaves neither a store row nor a
history row behind.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from goldmine.eval.history import FORMAT_VERSION, append_history, check_history, git_commit
from goldmine.eval.metrics import Metric, parse_metrics
from goldmine.eval.model import Gold
from goldmine.eval.readers import read_gold
from goldmine.eval.scoring import EvalResult, evaluate_run_file

from goldmine.errors import InputError
from goldmine.text import sha256_file

DEFAULT_METRICS = "recall@1,recall@5,recall@10,mrr,ndcg@10"
_VERSION_SPEC = re.compile(r"^(v?\d+|latest)$", re.IGNORECASE)


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
            }
        )
        return data


def load_gold(spec: str, fmt: str | None = None, db: Path | None = None) -> Gold:
    """A gold file, or a published version from the store (``v3``, ``3``, ``latest``)."""
    path = Path(spec)
    if path.exists() or not _VERSION_SPEC.match(spec):
        return read_gold(path, fmt)
    from goldmine.goldset.versions import load_gold as load_version

    from goldmine.store import open_store

    with open_store(db) as con:
        return load_version(con, spec)


class _Hasher(threading.Thread):
    """Hashes a file beside the parse (hashlib releases the GIL on large reads)."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.digest: str | None = None
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            self.digest = sha256_file(self.path)
        except OSError as exc:
            self.error = exc


def score_run_file(
    gold: Gold,
    run_path: Path,
    metrics: Sequence[Metric],
    *,
    rel_level: int = 1,
    run_format: str | None = None,
    abstain_below: float | None = None,
    label: str | None = None,
) -> EvalOutcome:
    if not run_path.exists():
        raise InputError("no such file", path=run_path)
    hasher = _Hasher(run_path)
    hasher.start()
    result, fmt = evaluate_run_file(
        gold, run_path, metrics, rel_level, run_format=run_format, abstain_below=abstain_below
    )
    hasher.join()
    return EvalOutcome(result, gold, str(run_path), fmt, hasher.digest, label)


def run_eval(
    gold_spec: str,
    run_path: Path,
    metrics: str | Sequence[str] = DEFAULT_METRICS,
    *,
    rel_level: int = 1,
    gold_format: str | None = None,
    run_format: str | None = None,
    abstain_below: float | None = None,
    label: str | None = None,
    history: Path | None = None,
    db: Path | None = None,
    store: bool = True,
) -> EvalOutcome:
    """Score ``run_path`` against ``gold_spec``, store the run, append the history row."""
    parsed = parse_metrics(metrics)
    if history is not None:
        check_history(history)
    gold = load_gold(gold_spec, gold_format, db)
    outcome = score_run_file(
        gold,
        run_path,
        parsed,
        rel_level=rel_level,
        run_format=run_format,
        abstain_below=abstain_below,
        label=label,
    )
    keep(outcome, history=history, db=db, store=store)
    return outcome


def keep(
    outcome: EvalOutcome, *, history: Path | None, db: Path | None, store: bool
) -> EvalOutcome:
    """Store the run with its per-query scores, and append its history row."""
    outcome.git_commit = git_commit() if history is not None or store else None
    if store:
        from goldmine.eval.store import save_run

        from goldmine.store import open_store

        with open_store(db) as con:
            outcome.run_id = save_run(con, outcome)
    if history is not None:
        append_history(history, history_row(outcome))
    return outcome


def history_row(outcome: EvalOutcome) -> dict[str, object]:
    result = outcome.result
    row: dict[str, object] = {
        "time": outcome.created_at.isoformat(timespec="seconds"),
        "run_id": outcome.run_id,
        "label": outcome.label,
        "git_commit": outcome.git_commit,
        "gold_source": outcome.gold.source,
        "gold_version": outcome.gold.version,
        "gold_hash": outcome.gold.hash,
        "run_source": outcome.run_source,
        "run_hash": outcome.run_hash,
        "rel_level": result.rel_level,
        "n_queries": result.n_queries,
        "n_missing": len(result.missing),
        "n_no_answer": len(result.no_answer),
        "format_version": FORMAT_VERSION,
    }
    row.update(result.summary)
    return row
