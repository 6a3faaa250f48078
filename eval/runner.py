"""One eval run end to end: load the gold set, get the run, score it, keep it.

Everything that can fail on input (metric names, the gold file, the run file, the history file's
header) is checked before anything is written, so a failed eval leaves neither a store row nor a
history row behind.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from goldmine.errors import GoldmineError, InputError
from goldmine.eval.history import append_history, check_history, git_commit, history_row
from goldmine.eval.result import EvalOutcome, EvalResult
from goldmine.eval.scoring import (
    check_overlap,
    check_returned_ids,
    duplicates_warning,
    evaluate,
    evaluate_run_file,
    no_answerable_warning,
)
from goldmine.files import require_file
from goldmine.gold import Gold, Run
from goldmine.metrics import Metric, parse_metrics
from goldmine.readers import read_gold, read_run
from goldmine.store import Store, as_store
from goldmine.text import sha256_file

if TYPE_CHECKING:
    from goldmine.eval.sources import HttpOptions

DEFAULT_METRICS = "recall@1,recall@5,recall@10,mrr,ndcg@10"
_VERSION_SPEC = re.compile(r"^(v?\d+|latest)$", re.IGNORECASE)


def load_gold(spec: str, fmt: str | None = None, store: Store | None = None) -> Gold:
    """A gold file, or a published version from the store (``v3``, ``3``, ``latest``)."""
    path = Path(spec)
    if path.exists() or not _VERSION_SPEC.match(spec):
        return read_gold(path, fmt)

    from goldmine.versions import load_gold as load_version  # a file needs no store

    with as_store(store).open(read_only=True) as con:
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
    require_file(run_path)
    hasher = _Hasher(run_path)
    hasher.start()
    result, fmt = evaluate_run_file(
        gold, run_path, metrics, rel_level, run_format=run_format, abstain_below=abstain_below
    )
    hasher.join()
    outcome = EvalOutcome(result, gold, str(run_path), fmt, hasher.digest, label)
    overlap(outcome)
    if result.n_queries and not any(result.summary.values()):
        # Every figure 0: read again (only then) to tell whether any ranked id was judged.
        _warn_now(outcome, check_returned_ids(gold, read_run(run_path, run_format), file=True))
    return outcome


def overlap(outcome: EvalOutcome) -> None:
    """A run file that shares no query id with the gold is an error; under half is a warning,
    said now, before anything prints a metric (see ``scoring.check_overlap``)."""
    _warn_now(outcome, check_overlap(outcome.result, outcome.gold))


def _warn_now(outcome: EvalOutcome, warning: str | None) -> None:
    """A warning said now, before any metric, and kept for --json's ``warnings``."""
    if warning is not None:
        from goldmine.output import warn

        warn(warning)
        outcome.warnings.append(warning)


@dataclass
class RunSource:
    """Where the ranked ids come from: exactly one of a file, a callable, a URL, a baseline."""

    path: Path | None = None
    format: str | None = None
    retriever: str | None = None
    batch: bool | None = None
    http: HttpOptions | None = None
    baseline: str | None = None
    k: int | None = None  # how many ids to ask a retriever for
    # What production retrieved: the stored trace retrievals, in [since, until).
    traces: bool = False
    since: datetime | None = None
    until: datetime | None = None

    def check(self) -> None:
        given = [x for x in (self.path, self.retriever, self.http, self.baseline) if x is not None]
        if len(given) + self.traces != 1:
            raise InputError(
                "give exactly one run source: --run FILE, --retriever module:function, "
                "--http URL, --baseline bm25|dense|hybrid or --run-from-traces"
            )
        if self.http is not None:
            self.http.check()

    def retrieve(self, gold: Gold, k: int, store: Store | None) -> Run:
        # Here, not at the top: the retrievers' module (HTTP client, progress bars) is a tenth of
        # a second of `eval run`'s start-up on a run file, which never needs it.
        from goldmine.eval import sources

        if self.retriever is not None:
            return sources.run_callable(gold, self.retriever, k, batch=self.batch)
        if self.http is not None:
            return sources.run_http(gold, self.http, k)
        if self.baseline is not None:
            return sources.run_baseline(gold, self.baseline, k, store)
        if self.traces:
            return sources.run_traces(gold, store, self.since, self.until)
        assert self.path is not None
        return read_run(self.path, self.format)


@dataclass(frozen=True)
class Reranker:
    """The two k's: what the model sees (k_prompt) and what the first stage returns."""

    k_prompt: int = 5
    k_candidates: int = 50

    def metrics(self) -> list[Metric]:
        return parse_metrics([f"recall@{self.k_prompt}", f"recall@{self.k_candidates}", "mrr"])


def _reranker_report(result: EvalResult, reranker: Reranker) -> dict[str, Any]:
    kp, kc = f"recall@{reranker.k_prompt}", f"recall@{reranker.k_candidates}"
    n = len(result.per_query)
    gap = sum(1 for s in result.per_query.values() if s[kc] > 0 and s[kp] == 0)
    at_prompt, at_candidates = result.summary[kp], result.summary[kc]
    mrr = result.summary["mrr"]
    return {
        "k_prompt": reranker.k_prompt,
        "k_candidates": reranker.k_candidates,
        "recall_at_prompt": at_prompt,
        "recall_at_candidates": at_candidates,
        "mrr": mrr,
        "opportunity_per_100": 100.0 * gap / n if n else 0.0,
        "opportunity_queries": gap,
        "reading": reading(at_candidates, mrr, reranker, 100.0 * gap / n if n else 0.0),
    }


# Where the lesson's reading draws its lines: at least 0.80 of answers in the candidates is "high"
# recall, an MRR under 0.50 means the first answer sits below rank 2 on average ("low").
HIGH_RECALL = 0.80
LOW_MRR = 0.50


def reading(recall_at_candidates: float, mrr: float, reranker: Reranker, opportunity: float) -> str:
    """The lesson's diagnosis from recall at the candidate depth, MRR and the gap."""
    kc = reranker.k_candidates
    if recall_at_candidates < HIGH_RECALL:
        return (
            f"low recall@{kc}: not a ranking problem; the answers are not in the candidates "
            "(look at chunking, the embedding model, filters, the query)"
        )
    kp = reranker.k_prompt
    if opportunity >= 10:
        low = " and low MRR" if mrr < LOW_MRR else " and MRR"
        return (
            f"high recall@{kc}{low}, but {opportunity:.0f} per hundred have their answer in the "
            f"candidates and not in the top {kp}: a ranking problem, a reranker (or a larger k "
            "sent to the model) would recover them"
        )
    if mrr < LOW_MRR:
        return (
            f"high recall@{kc} and low MRR, but the answers already reach the top {kp} "
            f"({opportunity:.0f} per hundred miss it): they rank low inside the prompt; a "
            "reranker would only reorder it, which matters if the model reads the first ones most"
        )
    return f"high recall@{kc} and MRR: the first stage already ranks answers into the prompt"


def _with_extras(
    metrics: Sequence[Metric], extras: Sequence[Metric]
) -> tuple[list[Metric], list[str]]:
    names = {m.name for m in metrics}
    added = [m for m in extras if m.name not in names]
    return [*metrics, *added], [m.name for m in added]


def _strip(result: EvalResult, names: Sequence[str]) -> None:
    """Drop metrics the user did not ask for (computed only for the reranker report)."""
    if not names:
        return
    result.metrics = [m for m in result.metrics if m.name not in names]
    for name in names:
        result.summary.pop(name, None)
    for scores in result.per_query.values():
        for name in names:
            scores.pop(name, None)


def run_eval(
    gold_spec: str,
    source: RunSource | Path,
    metrics: str | Sequence[str] = DEFAULT_METRICS,
    *,
    rel_level: int = 1,
    gold_format: str | None = None,
    run_format: str | None = None,
    abstain_below: float | None = None,
    label: str | None = None,
    history: Path | None = None,
    store: Store | None = None,
    keep_run: bool = True,
    reranker: Reranker | None = None,
    save_run: Path | None = None,
) -> EvalOutcome:
    """Score a run against ``gold_spec``, keep it in ``store`` (unless not ``keep_run``), append
    the history row."""
    if isinstance(source, Path):
        source = RunSource(path=source, format=run_format)
    source.check()
    asked = parse_metrics(metrics)
    reranker = reranker or Reranker()
    parsed, extras = _with_extras(asked, reranker.metrics())
    if history is not None:
        check_history(history)
    gold = load_gold(gold_spec, gold_format, store)
    if source.path is not None and save_run is None:
        outcome = score_run_file(
            gold,
            source.path,
            parsed,
            rel_level=rel_level,
            run_format=source.format,
            abstain_below=abstain_below,
            label=label,
        )
    else:
        k = source.k or max([reranker.k_candidates, *(m.k or 0 for m in parsed)])
        run = source.retrieve(gold, k, store)
        refuse_all_failed(run)
        note = None
        if source.traces:
            from goldmine.eval.sources import asked_in_traces

            gold, note = asked_in_traces(gold, run)
        result = evaluate(gold, run, parsed, rel_level, abstain_below)
        outcome = EvalOutcome(result, gold, run.source, run.format, run.hash, label)
        if source.path is None:  # a retriever's ids, seen here whole
            _warn_now(outcome, check_returned_ids(gold, run))
        if note is not None:
            from goldmine.output import info

            info(note)
            outcome.warnings.append(note)
        if source.path is not None:
            overlap(outcome)
        if save_run is not None:
            from goldmine.eval.sources import write_run_file

            write_run_file(run, save_run)
    for warning in (duplicates_warning(outcome.result), no_answerable_warning(outcome.result)):
        if warning is not None:  # printed with the report; in --json's warnings too
            outcome.warnings.append(warning)
    outcome.reranker = _reranker_report(outcome.result, reranker)
    _strip(outcome.result, extras)
    keep(outcome, history=history, store=store, keep_run=keep_run)
    return outcome


def refuse_all_failed(run: Run) -> None:
    """A retriever that failed on every query ranked nothing: its zeros would read as a score
    (MRR 0.00, exit 0). A failure, not bad input (exit 1); failing on some queries is scored."""
    if run.errors and not run.results:
        from goldmine.output import count

        qid, said = next(iter(run.errors.items()))
        n = count(len(run.errors), "query")
        raise GoldmineError(
            f"{run.source} failed on every query, so nothing was scored ({n}; the first: "
            f"{qid}: {said})"
        )


def keep(
    outcome: EvalOutcome, *, history: Path | None, store: Store | None, keep_run: bool
) -> EvalOutcome:
    """Store the run with its per-query scores, and append its history row."""
    outcome.git_commit = git_commit() if history is not None or keep_run else None
    if keep_run:
        from goldmine.eval.store import store_run

        # The lean connection for small runs (start-up is the product); the full one when the
        # columnar engine hands over a frame to write through Arrow.
        with as_store(store).open(lean=outcome.result.frame is None) as con:
            outcome.run_id = store_run(con, outcome)
    if history is not None:
        append_history(history, history_row(outcome))
    return outcome
