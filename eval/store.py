"""Eval runs in the DuckDB store: each run's summary, its per-query scores and its queries.

Kept so that ``compare`` and the history can pair runs query by query long after the run files are
gone. Lists are passed as parameters and unnested in SQL: one statement per table, no row loop and
no dataframe library on the path.
"""

from __future__ import annotations

import json
from datetime import UTC
from typing import TYPE_CHECKING, Any

from goldmine.errors import NotFoundError
from goldmine.store import fetch_dicts, transaction

if TYPE_CHECKING:
    import duckdb

    from goldmine.eval.result import EvalOutcome


def store_run(con: duckdb.DuckDBPyConnection, outcome: EvalOutcome) -> int:
    result = outcome.result
    with transaction(con):
        run_id = con.execute("SELECT nextval('eval_run_id_seq')").fetchall()[0][0]
        con.execute(
            """
            INSERT INTO eval_runs (run_id, created_at, label, gold_source, gold_hash, gold_version,
                run_source, run_hash, git_commit, rel_level, n_queries, n_missing, n_ignored,
                n_no_answer, metrics, config)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                run_id,
                outcome.created_at.replace(tzinfo=None),
                outcome.label,
                outcome.gold.source,
                outcome.gold.hash,
                outcome.gold.version,
                outcome.run_source,
                outcome.run_hash,
                outcome.git_commit,
                result.rel_level,
                result.n_queries,
                len(result.missing),
                len(result.ignored),
                len(result.no_answer),
                json.dumps(result.summary),
                json.dumps({"run_format": outcome.run_format, "gold_format": outcome.gold.format}),
            ],
        )
        if result.frame is not None:
            _save_scores_frame(con, run_id, result)
        else:
            _save_scores(con, run_id, result.per_query)
        _save_queries(con, run_id, outcome)
    return int(run_id)


def _save_scores(
    con: duckdb.DuckDBPyConnection, run_id: int, per_query: dict[str, dict[str, float]]
) -> None:
    qids: list[str] = []
    names: list[str] = []
    values: list[float] = []
    for qid, scores in per_query.items():
        for name, value in scores.items():
            qids.append(qid)
            names.append(name)
            values.append(value)
    con.execute(
        "INSERT INTO eval_scores SELECT ?, unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), "
        "unnest(?::DOUBLE[])",
        [run_id, qids, names, values],
    )


def _save_scores_frame(con: duckdb.DuckDBPyConnection, run_id: int, result) -> None:
    """The columnar engine's per-query table, long, through Arrow (one scan, no Python rows)."""
    long = result.frame.select("qid", *(m.name for m in result.metrics)).unpivot(
        index="qid", variable_name="metric", value_name="value"
    )
    con.register("goldmine_scores", long.to_arrow())
    try:
        con.execute(
            "INSERT INTO eval_scores SELECT ?, qid, metric, value FROM goldmine_scores", [run_id]
        )
    finally:
        con.unregister("goldmine_scores")


def _save_queries(con: duckdb.DuckDBPyConnection, run_id: int, outcome: EvalOutcome) -> None:
    result = outcome.result
    gold = outcome.gold
    qids = list(gold.queries)
    texts = [gold.queries[q].query for q in qids]
    answerable = [q in result.per_query for q in qids]
    no_answer = {r.query_id: r.returned for r in result.no_answer}
    missing = set(result.missing)
    returned = [no_answer.get(q, result.returned.get(q, 0)) for q in qids]
    in_run = [q not in missing and (q not in no_answer or no_answer[q] > 0) for q in qids]
    con.execute(
        "INSERT INTO eval_queries SELECT ?, unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), "
        "unnest(?::BOOLEAN[]), unnest(?::INTEGER[]), unnest(?::BOOLEAN[])",
        [run_id, qids, texts, answerable, returned, in_run],
    )


def find_run(con: duckdb.DuckDBPyConnection, ref: str) -> dict[str, Any]:
    """A stored run by id (``12``, ``#12``) or by label (the latest run with that label)."""
    ref = ref.strip().lstrip("#")
    rows = []
    if ref.isdigit():
        rows = fetch_dicts(con, "SELECT * FROM eval_runs WHERE run_id = ?", [int(ref)])
    if not rows:
        rows = fetch_dicts(
            con, "SELECT * FROM eval_runs WHERE label = ? ORDER BY run_id DESC LIMIT 1", [ref]
        )
    if not rows:
        raise NotFoundError(f"no stored eval run with id or label {ref!r} (see goldmine eval runs)")
    return rows[0]


def run_scores(con: duckdb.DuckDBPyConnection, run_id: int) -> dict[str, dict[str, float]]:
    """query id -> metric -> value for a stored run."""
    scores: dict[str, dict[str, float]] = {}
    rows = con.execute(
        "SELECT query_id, metric, value FROM eval_scores WHERE run_id = ?", [run_id]
    ).fetchall()
    for qid, metric, value in rows:
        scores.setdefault(qid, {})[metric] = value
    return scores


def list_runs(con: duckdb.DuckDBPyConnection, limit: int = 20) -> list[dict[str, Any]]:
    out = fetch_dicts(
        con,
        "SELECT run_id, created_at, label, gold_source, gold_version, gold_hash, run_source, "
        "n_queries, metrics FROM eval_runs ORDER BY run_id DESC LIMIT ?",
        [limit],
    )
    for item in out:
        item["metrics"] = json.loads(item["metrics"])
        # Stored without a zone, written as UTC (save_outcome): say so to the reader.
        item["created_at"] = item["created_at"].replace(tzinfo=UTC)
    return out
