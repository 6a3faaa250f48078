"""``triage run``: the steps in order, each a plain function over the connection.

Each step commits on its own, and each picks up where an interrupted run stopped: events and
per-query rows are rebuilt from the ingest tables (seconds), fuzzy dedupe and clustering only touch
queries without a canonical or a cluster, and embeddings are cached chunk by chunk.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from goldmine.errors import InputError
from goldmine.store import transaction

if TYPE_CHECKING:
    import duckdb


@dataclass
class RunResult:
    run_id: int
    n_events: int = 0
    n_queries: int = 0
    n_new_queries: int = 0
    n_embedded: int = 0
    n_clusters: int = 0
    cluster: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


def _check_model(con: duckdb.DuckDBPyConnection, model: str) -> None:
    rows = con.execute(
        "SELECT model FROM triage_runs WHERE status = 'done' ORDER BY run_id DESC LIMIT 1"
    ).fetchall()
    if (
        rows
        and rows[0][0]
        and rows[0][0] != model
        and con.execute("SELECT count(*) FROM triage_cluster_ids").fetchall()[0][0]
    ):
        raise InputError(
            f"the clusters were built with the embedding model {rows[0][0]!r}, not {model!r}: "
            f"run with --model {rows[0][0]!r} to keep cluster ids comparable"
        )


def run_triage(
    con: duckdb.DuckDBPyConnection,
    *,
    since: datetime | None = None,
    model: str | None = None,
    window_s: int | None = None,
) -> RunResult:
    """Normalize, dedupe, embed, cluster, tag and rank; returns what each step did."""
    from goldmine.triage import cluster, dedupe, events, report, tags

    from goldmine.config import load_config
    from goldmine.embed import model_key

    key = model_key(model)
    _check_model(con, key)
    if window_s is None:
        window_s = int(load_config().get("triage", "reformulation_window", events.DEFAULT_WINDOW_S))
    if window_s < 0:
        raise InputError(f"the reformulation window must be >= 0 seconds, not {window_s}")
    run_id = con.execute("SELECT coalesce(max(run_id), 0) + 1 FROM triage_runs").fetchall()[0][0]
    con.execute(
        "INSERT INTO triage_runs (run_id, started_at, model, status, since) "
        "VALUES (?, now()::TIMESTAMP, ?, 'running', ?)",
        [run_id, key, since],
    )
    result = RunResult(run_id)

    def step(name: str, fn, *args):
        start = time.perf_counter()
        with transaction(con):
            out = fn(*args)
        result.timings[name] = round(time.perf_counter() - start, 3)
        return out

    result.n_events = step("events", events.build_events, con, since, window_s)
    result.n_queries = step("queries", events.aggregate_queries, con)
    result.n_new_queries = step("fuzzy_dedupe", dedupe.fuzzy_dedupe, con, run_id)
    # Embedding caches its vectors chunk by chunk, outside any transaction, so an interrupted
    # run keeps them; clustering then reads them back and commits with its assignments.
    before = con.execute("SELECT count(*) FROM embeddings WHERE model = ?", [key]).fetchall()[0][0]
    start = time.perf_counter()
    cluster.embed_canonicals(con, cluster.pending_canonicals(con)[1], model)
    result.timings["embed"] = round(time.perf_counter() - start, 3)
    after = con.execute("SELECT count(*) FROM embeddings WHERE model = ?", [key]).fetchall()[0][0]
    result.n_embedded = after - before
    result.cluster = step("cluster", cluster.cluster_queries, con, run_id, model)
    result.tags = step("tags", tags.tag_queries, con)
    result.n_clusters = step("clusters", report.summarize_clusters, con, run_id)
    params = {"k": result.cluster.get("k"), "window_s": window_s, **result.cluster}
    con.execute(
        """UPDATE triage_runs SET finished_at = now()::TIMESTAMP, status = 'done',
                  n_queries = ?, n_embedded = ?, n_clusters = ?, params = ?, timings = ?,
                  watermark = (SELECT max(ts) FROM triage_events)
           WHERE run_id = ?""",
        [
            result.n_queries,
            result.n_embedded,
            result.n_clusters,
            json.dumps(params),
            json.dumps(result.timings),
            run_id,
        ],
    )
    return result
