"""Score a run against a gold set: per-query values, averages, and the counts around them.

Semantics (trec_eval with ``-c``): a gold query missing from the run scores 0 on every metric and
counts in the averages; a run query with no gold is ignored; both are counted. Gold queries with no
relevant chunk at ``rel_level`` ("the corpus does not answer this") are left out of the averages and
scored apart: did the system abstain (return nothing, or nothing scoring at least
``abstain_below``)?
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Sequence
from pathlib import Path

from goldmine.errors import InputError
from goldmine.eval.result import EvalResult, NoAnswerResult, abstention
from goldmine.files import require_file
from goldmine.gold import Gold, Run
from goldmine.metrics import Metric, aggregate, score_query
from goldmine.readers import LARGE_FILE_BYTES, read_gold, read_run, run_format_of
from goldmine.text import normalize_query


def match_run_to_gold(gold: Gold, run: Run) -> tuple[dict[str, str], list[str]]:
    """Gold query id -> the run key that ranks for it, and the run keys that match no gold query.

    Keys match by id; where either side keys queries by their text, by text too: the exact text
    first, then the normalized one for a query no exact text took ("Reset password" and "reset
    password!" are two queries, each with its own ranking). A text two gold queries share ranks
    for both. An id comes first: a text naming a query the run also gives by id takes nothing.
    """
    ranks = {key: key for key in run.results if key in gold.queries}
    rest = [key for key in run.results if key not in ranks]
    by_text = run.keyed_by == "text" or gold.keyed_by_text
    if not (rest and by_text):  # the texts are indexed only when some key is no id
        return ranks, rest
    exact, normalized = gold.text_index()
    ignored: list[str] = []
    loose: list[str] = []
    for key in rest:
        if key.strip() in exact:
            for qid in exact[key.strip()]:
                ranks.setdefault(qid, key)
        else:
            loose.append(key)
    for key in loose:
        qids = normalized.get(normalize_query(key), [])
        for qid in qids:
            ranks.setdefault(qid, key)
        if not qids:
            ignored.append(key)
    return ranks, ignored


def check_abstain_below(value: object) -> None:
    """A finite number or None: every comparison with NaN is false, so --abstain-below nan
    abstained on nothing without a word, and "0.5" from Python failed inside the scoring."""
    if value is None:
        return
    number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not number or not math.isfinite(value):  # type: ignore[arg-type]
        raise InputError(
            f"abstain_below (--abstain-below): a number, the top score under which a no-answer "
            f"query counts as abstained on; not {value!r}"
        )


def evaluate(
    gold: Gold,
    run: Run,
    metrics: Sequence[Metric],
    rel_level: int = 1,
    abstain_below: float | None = None,
) -> EvalResult:
    check_abstain_below(abstain_below)
    matched, ignored = match_run_to_gold(gold, run)
    ranked_for = {qid: run.results[key] for qid, key in matched.items()}
    scores_for = {qid: (run.scores or {}).get(key) for qid, key in matched.items()}
    errors = {qid: run.errors[key] for qid, key in matched.items() if key in run.errors}
    taken = set(matched.values())
    errors.update({key: msg for key, msg in run.errors.items() if key not in taken})

    per_query: dict[str, dict[str, float]] = {}
    missing: list[str] = []
    no_answer: list[NoAnswerResult] = []
    for qid, query in gold.queries.items():
        ranked = ranked_for.get(qid)
        if not query.answerable(rel_level):
            no_answer.append(
                abstention(qid, query.query, ranked, scores_for.get(qid), abstain_below)
            )
            continue
        if ranked is None:
            missing.append(qid)
            ranked = []
        per_query[qid] = score_query(metrics, ranked, query.judged, rel_level)
    return EvalResult(
        metrics=list(metrics),
        summary=aggregate(per_query, metrics),
        per_query=per_query,
        rel_level=rel_level,
        n_queries=len(per_query),
        missing=missing,
        ignored=ignored,
        no_answer=no_answer,
        n_duplicates=run.n_duplicates,
        errors=errors,
        returned={qid: len(r) for qid, r in ranked_for.items()},
    )


def duplicates_warning(result: EvalResult) -> str | None:
    """What a run that repeats an id within a query is told (counted once, at its first rank),
    as a warning a script reads too (``--json``'s ``warnings``, ``Evaluation.warnings``)."""
    n = result.n_duplicates
    return f"{n} repeated ids within a query counted once, at first rank" if n else None


def no_answerable_warning(result: EvalResult) -> str | None:
    """A gold set with no answerable query has no mean: its 0.0s read as a retriever that finds
    nothing (the text report says so in its place; Python and --json read this)."""
    if result.n_queries:
        return None
    return (
        f"no answerable query (none has a doc graded relevant at rel_level {result.rel_level}): "
        "the means are over no query"
    )


def check_overlap(result: EvalResult, gold: Gold) -> str | None:
    """Whether the run was made for this gold set: its query ids must match the gold's.

    None of the answerable gold queries in the run is an InputError, under half a warning (the
    returned line), each with two ids from either side so a mismatch of id schemes ("q12" against
    "12") shows at a glance. Queries the gold has no answer for are not counted: a run may leave
    them out (that is abstaining).
    """
    n = result.n_queries
    if n == 0:
        return None
    missing = set(result.missing)
    found = [q for q in result.per_query if q not in missing]
    if len(found) * 2 >= n:
        return None
    run_ids = [*result.ignored[:2], *found[: max(0, 2 - len(result.ignored))]]
    ranked_none = [r.query_id for r in result.no_answer if r.returned]
    if not (run_ids or ranked_none or result.errors):  # as an empty run file is told
        raise InputError("the run is empty: it ranks nothing for any query")
    if not run_ids and ranked_none:  # "run ids look like (none)" said nothing of them
        run_ids = [f"{', '.join(ranked_none[:2])} (only queries the gold has no answer for)"]
    examples = (
        f"run ids look like {', '.join(run_ids) or '(none)'}; "
        f"gold ids look like {', '.join(result.missing[:2])}"
    )
    answerable = "answerable " if n != len(gold.queries) else ""
    queries = f"{n:,} {answerable}{'query' if n == 1 else 'queries'}"
    if not found:
        # texts match only a gold set that has them (a file or a version, not a dict or qrels)
        texts = ", or the query texts" if any(q.query for q in gold.queries.values()) else ""
        raise InputError(
            f"the run's query ids match none of the gold's {queries}: {examples}. "
            f"Was the run made for this gold set (the same query ids{texts})?"
        )
    return (
        f"the run has only {len(found)} of the gold's {queries} "
        f"({len(found) / n:.0%}); the {n - len(found)} missing score 0: {examples}"
    )


def check_returned_ids(gold: Gold, run: Run, *, file: bool = False) -> str | None:
    """Whether a retriever's (or a run file's) ids are of the gold's kind. A vector store
    answering its points' UUIDs, a search engine its internal _id, or a frame's doc ids written
    as floats (51.0) where the gold holds chunk ids scores 0 on every query with no word why:
    when none of the ids it returned, over every query, is one the gold judged, the returned
    line says so, with two ids from either side."""
    judged = {doc for q in gold.queries.values() for doc in q.judged}
    returned = [doc for ids in run.results.values() for doc in ids]
    if not judged or not returned or not judged.isdisjoint(returned):
        return None
    shown = list(dict.fromkeys(returned))[:2]
    theirs, ours = ", ".join(shown), ", ".join(sorted(judged)[:2])
    if file:
        floats = all(_FLOAT_ID.fullmatch(doc) for doc in shown)
        why = " (written as floats: 51.0 is not 51)" if floats else ""
        return (
            f"none of the {len(returned):,} ids the run ranks is one the gold judged, so every "
            f"query scores 0: its ids look like {theirs}{why}; the gold's look like {ours}. Was "
            "the run made over the same corpus, with the same ids?"
        )
    return (
        f"none of the {len(returned):,} ids the retriever returned is one the gold judged: "
        f"its ids look like {theirs}; the gold's look like {ours}. If they name the same "
        "chunks, have the retriever return the chunk ids (for --http, the field that holds "
        "them, or --json-path)"
    )


_FLOAT_ID = re.compile(r"-?\d+\.0")


def evaluate_files(
    gold_path: Path | str,
    run_path: Path | str,
    metrics: Sequence[Metric],
    rel_level: int = 1,
    *,
    gold_format: str | None = None,
    run_format: str | None = None,
    force: bool = False,
    abstain_below: float | None = None,
) -> EvalResult:
    """Score files, choosing the engine by the run file's size (``force`` for columnar)."""
    gold = read_gold(gold_path, gold_format)
    return evaluate_run_file(
        gold,
        Path(run_path),
        metrics,
        rel_level,
        run_format=run_format,
        force=force,
        abstain_below=abstain_below,
    )[0]


def evaluate_run_file(
    gold: Gold,
    run_path: Path,
    metrics: Sequence[Metric],
    rel_level: int = 1,
    *,
    run_format: str | None = None,
    force: bool = False,
    abstain_below: float | None = None,
) -> tuple[EvalResult, str | None]:
    """Score a run file against a gold set; returns the result and the run file's format."""
    check_abstain_below(abstain_below)
    require_file(run_path)  # a missing file is an InputError before the size is asked for
    # Above this size the columnar engine wins; below it polars' start-up costs more than a parse.
    big = force or Path(run_path).stat().st_size >= LARGE_FILE_BYTES
    if big:
        from goldmine import frames  # polars: worth its start-up only at this size
        from goldmine.eval import columnar
    if big and not gold.keyed_by_text:
        ranked = frames.read_ranked_frame(
            Path(run_path), run_format or run_format_of(Path(run_path))
        )
        if ranked is not None:
            frame, n_dupes = ranked
            result = columnar.score_frame(
                gold, frame, metrics, rel_level, n_duplicates=n_dupes, abstain_below=abstain_below
            )
            return result, "trec"
    run = read_run(run_path, run_format)
    if big and run.keyed_by == "id" and not gold.keyed_by_text:
        result = columnar.score_frame(
            gold,
            columnar.run_to_frame(run),
            metrics,
            rel_level,
            n_duplicates=run.n_duplicates,
            abstain_below=abstain_below,
        )
        return result, run.format
    return evaluate(gold, run, metrics, rel_level, abstain_below), run.format
